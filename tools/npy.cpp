#include "npy.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

namespace tq::cli {
namespace {

// IEEE half to float, exactly (subnormals, Inf and NaN included).
float half_to_float(std::uint16_t h) {
    const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    float v;
    if (exponent == 0) v = std::ldexp(float(mantissa), -24);
    else if (exponent == 31) v = mantissa ? NAN : INFINITY;
    else v = std::ldexp(float(mantissa + 1024), exponent - 25);
    return sign ? -v : v;
}

// Text from the file as a message shows it: one line, printable ASCII (others as
// \xNN), at most 40 characters.
std::string shown(const std::string& text) {
    std::string out;
    for (unsigned char c : text.substr(0, 40)) {
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += static_cast<char>(c);
        } else {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02X", c);
            out += hex;
        }
    }
    return text.size() > 40 ? out + "..." : out;
}

}  // namespace

NpyArray read_npy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw NpyError(path + ": cannot open");
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw NpyError(path + ": not a .npy file");
    const int major = static_cast<unsigned char>(bytes[6]);
    if (major < 1 || major > 3) throw NpyError(path + ": unsupported .npy version " + std::to_string(major));
    std::size_t header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    std::size_t offset = 10;
    if (major >= 2) {
        if (bytes.size() < 12) throw NpyError(path + ": truncated header");
        header_len |= std::size_t(static_cast<unsigned char>(bytes[10])) << 16 |
                      std::size_t(static_cast<unsigned char>(bytes[11])) << 24;
        offset = 12;
    }
    if (header_len > 10000) throw NpyError(path + ": header of " + std::to_string(header_len) + " bytes (NumPy writes < 10000)");
    if (header_len > bytes.size() - offset) throw NpyError(path + ": truncated header");
    const std::string header = bytes.substr(offset, header_len);
    offset += header_len;

    std::smatch m;
    if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')")))
        throw NpyError(path + ": header has no dtype");
    const std::string descr = m[1];
    if (descr != "<f4" && descr != "<f2")
        throw NpyError(path + ": dtype '" + shown(descr) + "' (need float32 '<f4' or float16 '<f2')");
    if (!std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*(True|False))")) || m[1] == "True")
        throw NpyError(path + ": Fortran order (need C order: np.ascontiguousarray)");
    if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
        throw NpyError(path + ": header has no shape");
    NpyArray a;
    const std::string dims = m[1];
    if (!std::regex_match(dims, std::regex(R"(\s*(\d{1,12}\s*,\s*)*(\d{1,12}\s*,?\s*)?)")))
        throw NpyError(path + ": shape (" + shown(dims) + ") is not a tuple of sizes");
    const std::regex number(R"(\d+)");
    std::size_t count = 1;
    for (auto it = std::sregex_iterator(dims.begin(), dims.end(), number); it != std::sregex_iterator(); ++it) {
        const std::size_t n = std::stoull(it->str());  // at most 12 digits: no overflow
        if (n && count > (std::size_t(1) << 36) / n) throw NpyError(path + ": shape too large");
        a.shape.push_back(n);
        count *= n;
    }
    const std::size_t width = descr == "<f4" ? 4 : 2;
    if (bytes.size() - offset != count * width)
        throw NpyError(path + ": " + std::to_string(bytes.size() - offset) + " data bytes, the shape needs " +
                       std::to_string(count * width) + (bytes.size() - offset < count * width ? " (truncated)" : ""));
    a.data.resize(count);
    const char* p = bytes.data() + offset;
    for (std::size_t i = 0; i < count; ++i) {
        if (width == 4) {
            std::memcpy(&a.data[i], p + 4 * i, 4);
        } else {
            std::uint16_t h;
            std::memcpy(&h, p + 2 * i, 2);
            a.data[i] = half_to_float(h);
        }
    }
    return a;
}

}  // namespace tq::cli

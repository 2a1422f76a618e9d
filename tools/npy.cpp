#include "npy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

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
// \xNN), at most 40 characters of output however many bytes it escapes.
std::string shown(const std::string& text) {
    constexpr std::size_t limit = 40;
    std::string out;
    for (unsigned char c : text) {
        char piece[8] = {static_cast<char>(c), 0};
        if (c < 0x20 || c >= 0x7f || c == '\\') std::snprintf(piece, sizeof piece, "\\x%02X", c);
        if (out.size() + std::strlen(piece) > limit) return out + "...";
        out += piece;
    }
    return out;
}

// Where the value of 'key' starts in the header's dict (after the colon and any
// spaces), or npos.  Plain scanning: std::regex recurses per character and
// overflows the stack on a long hostile header.
std::size_t value_at(const std::string& header, const std::string& key) {
    std::size_t i = header.find("'" + key + "'");
    if (i == std::string::npos) return i;
    i += key.size() + 2;
    while (i < header.size() && header[i] == ' ') ++i;
    if (i == header.size() || header[i] != ':') return std::string::npos;
    ++i;
    while (i < header.size() && header[i] == ' ') ++i;
    return i;
}

// The text between `open` at `at` and the next `close`, or false.
bool enclosed(const std::string& header, std::size_t at, char open, char close, std::string& out) {
    if (at >= header.size() || header[at] != open) return false;
    const std::size_t end = header.find(close, at + 1);
    if (end == std::string::npos) return false;
    out = header.substr(at + 1, end - at - 1);
    return true;
}

// "3, 4", "3," or "" (a tuple's inside) as sizes of at most 12 digits, or false.
bool parse_sizes(const std::string& dims, std::vector<std::size_t>& out) {
    std::vector<std::string> items;
    for (std::size_t begin = 0;;) {
        const std::size_t end = std::min(dims.find(',', begin), dims.size());
        const std::size_t first = dims.find_first_not_of(' ', begin);
        items.push_back(first < end ? dims.substr(first, dims.find_last_not_of(' ', end - 1) + 1 - first) : "");
        if (end == dims.size()) break;
        begin = end + 1;
    }
    if (items.back().empty()) items.pop_back();  // no sizes, or a trailing comma
    for (const std::string& item : items) {
        if (item.empty() || item.size() > 12 || item.find_first_not_of("0123456789") != std::string::npos) return false;
        out.push_back(std::stoull(item));  // at most 12 digits: no overflow
    }
    return true;
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

    std::string descr, dims;
    if (!enclosed(header, value_at(header, "descr"), '\'', '\'', descr)) throw NpyError(path + ": header has no dtype");
    if (descr != "<f4" && descr != "<f2")
        throw NpyError(path + ": dtype '" + shown(descr) + "' (need float32 '<f4' or float16 '<f2')");
    const std::size_t order = value_at(header, "fortran_order");
    if (order == std::string::npos || header.compare(order, 5, "False") != 0)
        throw NpyError(path + ": Fortran order (need C order: np.ascontiguousarray)");
    if (!enclosed(header, value_at(header, "shape"), '(', ')', dims)) throw NpyError(path + ": header has no shape");
    NpyArray a;
    if (!parse_sizes(dims, a.shape)) throw NpyError(path + ": shape (" + shown(dims) + ") is not a tuple of sizes");
    std::size_t count = 1;
    for (const std::size_t n : a.shape) {
        if (n && count > (std::size_t(1) << 36) / n) throw NpyError(path + ": shape too large");
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

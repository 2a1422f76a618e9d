#include "gguf.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace llama {
namespace {

// Value type tags of the GGUF format.
enum : std::uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };

// Bytes of one item of a fixed-size value type; 0 for strings (a u64 length, then
// the bytes), which take at least 8.
std::uint64_t item_bytes(std::uint32_t type) {
    switch (type) {
    case u8: case i8: case boolean: return 1;
    case u16: case i16: return 2;
    case u32: case i32: case f32: return 4;
    case u64: case i64: case f64: return 8;
    default: return 0;
    }
}

bool is_float(std::uint32_t type) { return type == f32 || type == f64; }
bool is_integer(std::uint32_t type) { return item_bytes(type) != 0 && type != boolean && !is_float(type); }

// Reads the file front to back; every count and length is checked against the bytes
// left before anything is read or allocated for it.
class Cursor {
public:
    Cursor(const std::vector<std::uint8_t>& bytes, const std::string& path) : bytes_(bytes), path_(path) {}

    template <class T>
    T read() {
        T v;
        std::memcpy(&v, take(sizeof(T)), sizeof(T));
        return v;
    }
    std::string read_string() {
        auto n = read<std::uint64_t>();
        const auto* p = take(n);
        return {reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)};
    }
    Scalar read_scalar(std::uint32_t type) {
        switch (type) {
        case u8: return std::uint64_t{read<std::uint8_t>()};
        case i8: return std::int64_t{read<std::int8_t>()};
        case u16: return std::uint64_t{read<std::uint16_t>()};
        case i16: return std::int64_t{read<std::int16_t>()};
        case u32: return std::uint64_t{read<std::uint32_t>()};
        case i32: return std::int64_t{read<std::int32_t>()};
        case f32: return double{read<float>()};
        case boolean: return read<std::uint8_t>() != 0;
        case string: return read_string();
        case u64: return read<std::uint64_t>();
        case i64: return read<std::int64_t>();
        case f64: return read<double>();
        default: fail("unknown value type " + std::to_string(type));
        }
    }
    // A scalar, or an array's place (its items are checked and skipped, not stored).
    Value read_value(std::uint32_t type) {
        if (type != array) return read_scalar(type);
        Array a{read<std::uint32_t>(), read<std::uint64_t>(), 0};
        if (a.type == array) fail("nested arrays are not supported");
        a.offset = at_;
        const std::uint64_t size = item_bytes(a.type);
        if (size == 0 && a.type != string) fail("unknown value type " + std::to_string(a.type));
        if (a.count > remaining() / (size ? size : 8))
            fail("array of " + std::to_string(a.count) + " items runs past the end");
        if (size)
            at_ += a.count * size;
        else
            for (std::uint64_t i = 0; i < a.count; ++i) take(read<std::uint64_t>());
        return a;
    }
    // Fails unless n entries of at least `least` bytes each fit in the bytes left.
    void expect(std::uint64_t n, std::uint64_t least, const char* what) {
        if (n > remaining() / least)
            fail("truncated: " + std::to_string(n) + " " + what + " need at least " + std::to_string(least) +
                 " bytes each, " + std::to_string(remaining()) + " bytes are left");
    }
    std::uint64_t offset() const { return at_; }
    void seek(std::uint64_t at) {
        if (at > bytes_.size()) fail("truncated");
        at_ = at;
    }
    std::uint64_t remaining() const { return bytes_.size() - at_; }
    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error(path_ + ": not a readable GGUF file: " + what + " (at byte " + std::to_string(at_) + ")");
    }

private:
    const std::uint8_t* take(std::uint64_t n) {
        if (n > remaining()) fail("truncated");
        const auto* p = bytes_.data() + at_;
        at_ += n;
        return p;
    }
    const std::vector<std::uint8_t>& bytes_;
    const std::string& path_;
    std::uint64_t at_ = 0;
};

// Bytes of n elements of a ggml type: blocks of 32 for the simple quantized ones, of
// 256 (a super-block) for the k-quants.  n <= 2^40 (checked when read): no overflow.
std::uint64_t type_bytes(std::uint32_t type, std::uint64_t n, const Cursor& c) {
    switch (static_cast<TensorType>(type)) {
    case TensorType::f32: return 4 * n;
    case TensorType::f16: return 2 * n;
    case TensorType::q4_0: return n / 32 * 18;
    case TensorType::q4_1: return n / 32 * 20;
    case TensorType::q5_0: return n / 32 * 22;
    case TensorType::q8_0: return n / 32 * 34;
    case TensorType::q4_k: return n / 256 * 144;
    case TensorType::q6_k: return n / 256 * 210;
    }
    c.fail("tensor type " + std::to_string(type) + " is not supported (f32, f16, q4_0, q4_1, q5_0, q8_0, q4_K, q6_K are)");
}

// The items of an array (checked when the file was read), each converted.
template <class T, class Convert>
std::vector<T> read_array(const std::vector<std::uint8_t>& bytes, const std::string& path, const Array& a,
                          Convert convert) {
    Cursor c(bytes, path);
    c.seek(a.offset);
    std::vector<T> out;
    out.reserve(static_cast<std::size_t>(a.count));  // at most the file's bytes / item_bytes
    for (std::uint64_t i = 0; i < a.count; ++i) out.push_back(convert(c.read_scalar(a.type)));
    return out;
}

}  // namespace

std::string shown(const std::string& text) {
    constexpr std::size_t limit = 64;
    std::string out;
    for (unsigned char ch : text) {
        char piece[8] = {static_cast<char>(ch), 0};
        if (ch < 0x20 || ch >= 0x7f || ch == '\\') std::snprintf(piece, sizeof piece, "\\x%02X", ch);
        if (out.size() + std::strlen(piece) > limit) return out + "...";
        out += piece;
    }
    return out;
}

std::uint64_t block_elements(std::uint32_t type) {
    switch (static_cast<TensorType>(type)) {
    case TensorType::f32:
    case TensorType::f16: return 1;
    case TensorType::q4_k:
    case TensorType::q6_k: return 256;
    default: return 32;
    }
}

std::uint64_t Tensor::elements() const {
    std::uint64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
}

GgufFile::GgufFile(const std::string& path) : path_(path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open");
    in.seekg(0, std::ios::end);
    const auto file_size = in.tellg();  // read at its size: no growth by doubling
    if (file_size < 0) throw std::runtime_error(path + ": cannot read");
    bytes_.resize(static_cast<std::size_t>(file_size));
    in.seekg(0);
    if (!in.read(reinterpret_cast<char*>(bytes_.data()), static_cast<std::streamsize>(bytes_.size())))
        throw std::runtime_error(path + ": cannot read");
    Cursor c(bytes_, path_);
    if (c.read<std::uint32_t>() != 0x46554747u) c.fail("bad magic (expected GGUF)");
    auto version = c.read<std::uint32_t>();
    if (version != 2 && version != 3) c.fail("version " + std::to_string(version) + " (2 and 3 are supported)");
    auto n_tensors = c.read<std::uint64_t>();
    auto n_values = c.read<std::uint64_t>();
    c.expect(n_values, 13, "metadata entries");  // key length, key, type, a value of 1 byte or more
    for (std::uint64_t i = 0; i < n_values; ++i) {
        auto key = c.read_string();
        auto type = c.read<std::uint32_t>();
        values_[key] = c.read_value(type);
    }
    c.expect(n_tensors, 32, "tensor infos");  // name length, name, dims, a dim, type, offset
    std::vector<std::pair<Tensor, std::uint64_t>> infos;
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
        Tensor t;
        t.name = c.read_string();
        auto dims = c.read<std::uint32_t>();
        if (dims == 0 || dims > 4) c.fail(shown(t.name) + ": " + std::to_string(dims) + " dimensions");
        std::uint64_t elements = 1;
        for (std::uint32_t d = 0; d < dims; ++d) {
            t.shape.push_back(c.read<std::uint64_t>());
            if (t.shape.back() == 0 || __builtin_mul_overflow(elements, t.shape.back(), &elements) || elements > (1ull << 40))
                c.fail(shown(t.name) + ": implausible shape");
        }
        t.type = c.read<std::uint32_t>();
        infos.emplace_back(std::move(t), c.read<std::uint64_t>());
    }
    std::uint64_t alignment = has("general.alignment") ? uint("general.alignment") : 32;
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        c.fail("alignment " + std::to_string(alignment) + " is not a power of two");
    // Sizes, never pointer sums: an offset near 2^64 must not wrap past the check.
    const std::uint64_t file = bytes_.size(), data = c.offset() + (alignment - c.offset() % alignment) % alignment;
    for (auto& [t, offset] : infos) {
        if (t.shape[0] % block_elements(t.type) != 0)
            c.fail(shown(t.name) + ": row length not a multiple of " + std::to_string(block_elements(t.type)));
        auto size = type_bytes(t.type, t.elements(), c);
        if (data > file || offset > file - data || size > file - data - offset) c.fail(shown(t.name) + ": data past the end");
        t.data = bytes_.data() + data + offset;
        tensors_[t.name] = std::move(t);
    }
}

const Tensor& GgufFile::tensor(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) throw std::runtime_error(path_ + ": no tensor " + name);
    return it->second;
}

const Value& GgufFile::value(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) throw std::runtime_error(path_ + ": no metadata " + key);
    return it->second;
}

std::uint64_t GgufFile::uint(const std::string& key) const {
    const auto* s = std::get_if<Scalar>(&value(key));
    if (s) {
        if (const auto* u = std::get_if<std::uint64_t>(s)) return *u;
        if (const auto* i = std::get_if<std::int64_t>(s); i && *i >= 0) return static_cast<std::uint64_t>(*i);
    }
    throw std::runtime_error(path_ + ": metadata " + key + " is not an unsigned integer");
}

int GgufFile::count(const std::string& key) const {
    const std::uint64_t n = uint(key);
    if (n > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
        throw std::runtime_error(path_ + ": metadata " + key + " = " + std::to_string(n) + " is out of range");
    return static_cast<int>(n);
}

bool GgufFile::flag(const std::string& key) const {
    const auto* s = std::get_if<Scalar>(&value(key));
    if (s) {
        if (const auto* b = std::get_if<bool>(s)) return *b;
    }
    throw std::runtime_error(path_ + ": metadata " + key + " is not a bool");
}

double GgufFile::real(const std::string& key) const {
    const auto* s = std::get_if<Scalar>(&value(key));
    if (s) {
        if (const auto* d = std::get_if<double>(s)) return *d;
    }
    throw std::runtime_error(path_ + ": metadata " + key + " is not a float");
}

std::string GgufFile::string(const std::string& key) const {
    const auto* s = std::get_if<Scalar>(&value(key));
    if (s) {
        if (const auto* str = std::get_if<std::string>(s)) return *str;
    }
    throw std::runtime_error(path_ + ": metadata " + key + " is not a string");
}

const Array& GgufFile::array(const std::string& key, const char* what) const {
    if (const auto* a = std::get_if<Array>(&value(key))) return *a;
    throw std::runtime_error(path_ + ": metadata " + key + " is not " + what);
}

std::vector<std::string> GgufFile::strings(const std::string& key) const {
    const Array& a = array(key, "an array of strings");
    if (a.type != llama::string) throw std::runtime_error(path_ + ": metadata " + key + " is not an array of strings");
    return read_array<std::string>(bytes_, path_, a, [](Scalar s) { return std::get<std::string>(std::move(s)); });
}

std::vector<double> GgufFile::reals(const std::string& key) const {
    const Array& a = array(key, "an array of floats");
    if (!is_float(a.type)) throw std::runtime_error(path_ + ": metadata " + key + " is not an array of floats");
    return read_array<double>(bytes_, path_, a, [](const Scalar& s) { return std::get<double>(s); });
}

std::vector<std::int64_t> GgufFile::integers(const std::string& key) const {
    const Array& a = array(key, "an array of integers");
    if (!is_integer(a.type))
        throw std::runtime_error(path_ + ": metadata " + key + " is not an array of integers");
    return read_array<std::int64_t>(bytes_, path_, a, [](const Scalar& s) {
        if (const auto* u = std::get_if<std::uint64_t>(&s)) return static_cast<std::int64_t>(*u);
        return std::get<std::int64_t>(s);
    });
}

}  // namespace llama

#include "gguf.hpp"

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace llama {
namespace {

// Value type tags of the GGUF format.
enum : std::uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };

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
    Value read_value(std::uint32_t type) {
        if (type != array) return read_scalar(type);
        auto item = read<std::uint32_t>();
        auto n = read<std::uint64_t>();
        if (item == array) fail("nested arrays are not supported");
        if (n > remaining()) fail("array of " + std::to_string(n) + " items runs past the end");
        std::vector<Scalar> items;
        items.reserve(static_cast<std::size_t>(n));
        for (std::uint64_t i = 0; i < n; ++i) items.push_back(read_scalar(item));
        return items;
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
// 256 (a super-block) for the k-quants.
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

}  // namespace

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
    bytes_.assign(std::istreambuf_iterator<char>(in), {});
    Cursor c(bytes_, path_);
    if (c.read<std::uint32_t>() != 0x46554747u) c.fail("bad magic (expected GGUF)");
    auto version = c.read<std::uint32_t>();
    if (version != 2 && version != 3) c.fail("version " + std::to_string(version) + " (2 and 3 are supported)");
    auto n_tensors = c.read<std::uint64_t>();
    auto n_values = c.read<std::uint64_t>();
    for (std::uint64_t i = 0; i < n_values; ++i) {
        auto key = c.read_string();
        auto type = c.read<std::uint32_t>();
        values_[key] = c.read_value(type);
    }
    std::vector<std::pair<Tensor, std::uint64_t>> infos;
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
        Tensor t;
        t.name = c.read_string();
        auto dims = c.read<std::uint32_t>();
        if (dims == 0 || dims > 4) c.fail(t.name + ": " + std::to_string(dims) + " dimensions");
        std::uint64_t elements = 1;
        for (std::uint32_t d = 0; d < dims; ++d) {
            t.shape.push_back(c.read<std::uint64_t>());
            if (t.shape.back() == 0 || __builtin_mul_overflow(elements, t.shape.back(), &elements) || elements > (1ull << 40))
                c.fail(t.name + ": implausible shape");
        }
        t.type = c.read<std::uint32_t>();
        infos.emplace_back(std::move(t), c.read<std::uint64_t>());
    }
    std::uint64_t alignment = has("general.alignment") ? uint("general.alignment") : 32;
    if (alignment == 0) c.fail("alignment 0");
    std::uint64_t data = (c.offset() + alignment - 1) / alignment * alignment;
    for (auto& [t, offset] : infos) {
        if (t.shape[0] % block_elements(t.type) != 0)
            c.fail(t.name + ": row length not a multiple of " + std::to_string(block_elements(t.type)));
        auto size = type_bytes(t.type, t.elements(), c);
        if (data + offset < data || data + offset + size > bytes_.size()) c.fail(t.name + ": data past the end");
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

std::vector<std::string> GgufFile::strings(const std::string& key) const {
    const auto* items = std::get_if<std::vector<Scalar>>(&value(key));
    std::vector<std::string> out;
    if (items) {
        for (const auto& item : *items) {
            const auto* str = std::get_if<std::string>(&item);
            if (!str) break;
            out.push_back(*str);
        }
        if (out.size() == items->size()) return out;
    }
    throw std::runtime_error(path_ + ": metadata " + key + " is not an array of strings");
}

}  // namespace llama

// A GGUF (v2/v3) reader for what a llama model needs: the metadata and the tensors.
// The file is read into memory once; tensors point into it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace llama {

// ggml tensor types this engine dequantizes (ggml.h numbering).
enum class TensorType : std::uint32_t { f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q8_0 = 8, q4_k = 12, q6_k = 14 };

// Elements per block of a quantized type (1 for f32, f16): 32, or 256 for the k-quants.
std::uint64_t block_elements(std::uint32_t type);

// Text from a file as an error message shows it: one line, printable ASCII (other
// bytes as \xNN), at most 64 characters (then "...").
std::string shown(const std::string& text);

struct Tensor {
    std::string name;
    std::vector<std::uint64_t> shape;  // shape[0] is the row length (ggml's ne[0])
    std::uint32_t type = 0;
    const std::uint8_t* data = nullptr;
    std::uint64_t elements() const;
};

using Scalar = std::variant<std::uint64_t, std::int64_t, double, bool, std::string>;
// An array's place in the file, read when asked for: the file's arrays cost no
// memory beyond the file's own until then.
struct Array {
    std::uint32_t type;    // of every item (a GGUF value type)
    std::uint64_t count;   // items
    std::uint64_t offset;  // of the first item
};
using Value = std::variant<Scalar, Array>;

class GgufFile {
public:
    // Throws std::runtime_error naming the file and what is wrong (not GGUF, truncated, ...).
    explicit GgufFile(const std::string& path);

    const Tensor& tensor(const std::string& name) const;  // throws if absent
    bool has_tensor(const std::string& name) const { return tensors_.count(name) != 0; }
    std::size_t tensor_count() const { return tensors_.size(); }
    bool has(const std::string& key) const { return values_.count(key) != 0; }
    // Each throws std::runtime_error naming the key if it is absent or of another type.
    std::uint64_t uint(const std::string& key) const;
    int count(const std::string& key) const;  // uint(key), which must fit in an int
    double real(const std::string& key) const;
    bool flag(const std::string& key) const;  // a bool
    std::string string(const std::string& key) const;
    std::vector<std::string> strings(const std::string& key) const;
    std::vector<double> reals(const std::string& key) const;            // an array of f32 or f64
    std::vector<std::int64_t> integers(const std::string& key) const;  // an array of integers

private:
    const Value& value(const std::string& key) const;  // throws if absent
    const Array& array(const std::string& key, const char* what) const;  // throws if not an array
    std::string path_;
    std::vector<std::uint8_t> bytes_;
    std::map<std::string, Value> values_;
    std::map<std::string, Tensor> tensors_;
};

}  // namespace llama

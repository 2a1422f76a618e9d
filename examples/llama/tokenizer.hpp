// Byte-level BPE (GPT-2 style) from a GGUF's vocabulary and merges, with the
// pre-tokenizer of tokenizer.ggml.pre = "smollm": every digit on its own, then
// GPT-2's split  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf.hpp"

namespace llama {

class Tokenizer {
public:
    explicit Tokenizer(const GgufFile& file);  // throws if the model's tokenizer is not byte-level BPE
    std::vector<std::int32_t> encode(std::string_view text) const;
    std::string decode(std::int32_t token) const;  // the token's bytes
    std::int32_t eos() const { return eos_; }
    std::size_t vocab_size() const { return vocab_.size(); }

private:
    void bpe(const std::string& piece, std::vector<std::int32_t>& out) const;

    std::vector<std::string> vocab_;
    std::unordered_map<std::string, std::int32_t> ids_;
    std::unordered_map<std::string, int> merge_rank_;  // "left right" -> rank
    std::string byte_char_[256];                       // byte -> its printable stand-in (UTF-8)
    std::unordered_map<std::string, unsigned char> char_byte_;
    mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache_;
    std::int32_t eos_ = -1;
};

}  // namespace llama

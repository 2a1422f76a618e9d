// Text to token ids and back, from a GGUF's vocabulary, with the algorithm its
// tokenizer.ggml.model names: "gpt2", byte-level BPE (bpe.cpp), or "llama",
// SentencePiece (spm.cpp).  Each reproduces llama.cpp's ids for that model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf.hpp"

namespace llama {

// One algorithm: the text's ids (no BOS) and one token's bytes.
class TokenizerModel {
public:
    virtual ~TokenizerModel() = default;
    virtual void encode(std::string_view text, std::vector<std::int32_t>& out) const = 0;
    virtual std::string decode(std::int32_t token) const = 0;
};

// Byte-level BPE (GPT-2 style) with the pre-tokenizer of tokenizer.ggml.pre = "smollm".
std::unique_ptr<TokenizerModel> make_bpe_tokenizer(const GgufFile& file);
// SentencePiece: greedy merges by score, byte fallback (spm.cpp).
std::unique_ptr<TokenizerModel> make_spm_tokenizer(const GgufFile& file);

class Tokenizer {
public:
    explicit Tokenizer(const GgufFile& file);  // throws if the model's tokenizer is neither
    // The text's ids, after BOS when with_bos and the model asks for one
    // (tokenizer.ggml.add_bos_token), as llama.cpp's tokenize with add_special.
    std::vector<std::int32_t> encode(std::string_view text, bool with_bos = true) const;
    std::string decode(std::int32_t token) const { return model_->decode(token); }  // the token's bytes
    std::int32_t eos() const { return eos_; }
    std::int32_t bos() const { return bos_; }
    bool adds_bos() const { return add_bos_; }
    std::size_t vocab_size() const { return vocab_size_; }

private:
    std::unique_ptr<TokenizerModel> model_;
    std::int32_t eos_ = -1, bos_ = -1;
    bool add_bos_ = false;
    std::size_t vocab_size_ = 0;
};

}  // namespace llama

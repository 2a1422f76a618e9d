#include "tokenizer.hpp"

#include <stdexcept>

namespace llama {

Tokenizer::Tokenizer(const GgufFile& file) {
    std::string kind = file.string("tokenizer.ggml.model");
    if (kind == "gpt2") {
        model_ = make_bpe_tokenizer(file);
    } else if (kind == "llama") {
        model_ = make_spm_tokenizer(file);
    } else {
        throw std::runtime_error("tokenizer " + shown(kind) + " is not supported (gpt2, byte-level BPE, and llama, SentencePiece, are)");
    }
    vocab_size_ = file.strings("tokenizer.ggml.tokens").size();
    auto id = [&](const char* key) {
        return file.has(key) ? static_cast<std::int32_t>(file.uint(key)) : std::int32_t{-1};
    };
    eos_ = id("tokenizer.ggml.eos_token_id");
    bos_ = id("tokenizer.ggml.bos_token_id");
    // llama.cpp's default when the key is absent: on for SentencePiece, off for BPE
    add_bos_ = file.has("tokenizer.ggml.add_bos_token") ? file.flag("tokenizer.ggml.add_bos_token") : kind == "llama";
    if (add_bos_ && (bos_ < 0 || static_cast<std::size_t>(bos_) >= vocab_size_))
        throw std::runtime_error("the model asks for a BOS token but names none in its vocabulary");
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text, bool with_bos) const {
    std::vector<std::int32_t> out;
    if (with_bos && add_bos_) out.push_back(bos_);
    model_->encode(text, out);
    return out;
}

}  // namespace llama

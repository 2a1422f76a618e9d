// SentencePiece ("llama" in tokenizer.ggml.model) from a GGUF's vocabulary, scores and
// token types, the way llama.cpp runs it (so that ids match it exactly):
//  1. user-defined tokens (type 4: Gemma's runs of newlines, spaces and tabs, ...) are cut
//     out of the text first, longest first; control tokens are not (text is not parsed
//     for specials);
//  2. in each remaining piece every space becomes U+2581 (no space is prepended when
//     tokenizer.ggml.add_space_prefix is false);
//  3. the piece starts as one symbol per UTF-8 character; the adjacent pair whose
//     concatenation is a token with the highest score merges first (ties: the leftmost),
//     until no adjacent pair is a token;
//  4. a final symbol that is not a token goes out byte by byte as <0xXX> tokens.
#include <algorithm>
#include <cstdio>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "tokenizer.hpp"

namespace llama {
namespace {

enum TokenType : std::int64_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

const std::string kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's space

class SpmTokenizer final : public TokenizerModel {
public:
    explicit SpmTokenizer(const GgufFile& file);
    void encode(std::string_view text, std::vector<std::int32_t>& out) const override;
    std::string decode(std::int32_t token) const override;

private:
    void encode_piece(const std::string& text, std::vector<std::int32_t>& out) const;
    std::int32_t id(const std::string& s) const {
        auto it = ids_.find(s);
        return it == ids_.end() ? -1 : it->second;
    }

    std::vector<std::string> vocab_;
    std::vector<float> scores_;
    std::vector<std::int64_t> types_;
    std::unordered_map<std::string, std::int32_t> ids_;
    std::vector<std::int32_t> user_defined_;  // longest text first
    std::int32_t byte_ids_[256];
    bool space_prefix_ = false;
};

SpmTokenizer::SpmTokenizer(const GgufFile& file) {
    vocab_ = file.strings("tokenizer.ggml.tokens");
    const auto scores = file.reals("tokenizer.ggml.scores");
    types_ = file.integers("tokenizer.ggml.token_type");
    if (scores.size() != vocab_.size() || types_.size() != vocab_.size())
        throw std::runtime_error("tokenizer.ggml.scores and token_type must have one entry per token");
    scores_.assign(scores.begin(), scores.end());
    for (std::size_t i = 0; i < vocab_.size(); ++i) {
        ids_[vocab_[i]] = static_cast<std::int32_t>(i);  // a repeated text: the last id, as llama.cpp
        if (types_[i] == user_defined && !vocab_[i].empty()) user_defined_.push_back(static_cast<std::int32_t>(i));
    }
    std::stable_sort(user_defined_.begin(), user_defined_.end(),
                     [&](std::int32_t a, std::int32_t b) { return vocab_[a].size() > vocab_[b].size(); });
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        std::int32_t t = id(name);
        byte_ids_[b] = t >= 0 ? t : id(std::string(1, static_cast<char>(b)));
    }
    // llama.cpp's default for SentencePiece: a space prefix
    space_prefix_ = !file.has("tokenizer.ggml.add_space_prefix") || file.flag("tokenizer.ggml.add_space_prefix");
}

void SpmTokenizer::encode(std::string_view text, std::vector<std::int32_t>& out) const {
    // Cut out the user-defined tokens, longest first: a list of pieces, each raw text
    // (token -1) or one token.
    struct Piece {
        std::string_view text;
        std::int32_t token;
    };
    std::vector<Piece> pieces{{text, -1}};
    for (std::int32_t t : user_defined_) {
        const std::string& needle = vocab_[static_cast<std::size_t>(t)];
        std::vector<Piece> next;
        for (const Piece& p : pieces) {
            if (p.token >= 0 || p.text.size() < needle.size()) {
                next.push_back(p);
                continue;
            }
            std::string_view rest = p.text;
            for (std::size_t at; (at = rest.find(needle)) != std::string_view::npos;) {
                if (at > 0) next.push_back({rest.substr(0, at), -1});
                next.push_back({{}, t});
                rest.remove_prefix(at + needle.size());
            }
            if (!rest.empty()) next.push_back({rest, -1});
        }
        pieces = std::move(next);
    }
    bool after_special = true;  // at the start, or after a token cut out
    for (const Piece& p : pieces) {
        if (p.token >= 0) {
            out.push_back(p.token);
            after_special = true;
            continue;
        }
        std::string escaped = space_prefix_ && after_special ? kSpace : std::string();
        for (char c : p.text) {
            if (c == ' ') escaped += kSpace;
            else escaped += c;
        }
        encode_piece(escaped, out);
        after_special = false;
    }
}

void SpmTokenizer::encode_piece(const std::string& text, std::vector<std::int32_t>& out) const {
    struct Symbol {
        std::size_t begin, size;
        int prev, next;
    };
    std::vector<Symbol> symbols;
    for (std::size_t at = 0; at < text.size();) {  // one symbol per UTF-8 character (by its lead byte)
        static const int kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
        std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(kLength[static_cast<unsigned char>(text[at]) >> 4]), text.size() - at);
        int index = static_cast<int>(symbols.size());
        symbols.push_back({at, n, index - 1, at + n == text.size() ? -1 : index + 1});
        at += n;
    }
    struct Pair {
        float score;
        int left, right;
        std::size_t size;
    };
    auto lower = [](const Pair& a, const Pair& b) { return a.score < b.score || (a.score == b.score && a.left > b.left); };
    std::priority_queue<Pair, std::vector<Pair>, decltype(lower)> queue(lower);
    auto consider = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        std::size_t size = symbols[left].size + symbols[right].size;
        std::int32_t t = id(text.substr(symbols[left].begin, size));
        if (t < 0) return;
        queue.push({scores_[static_cast<std::size_t>(t)], left, right, size});
    };
    for (int i = 1; i < static_cast<int>(symbols.size()); ++i) consider(i - 1, i);
    while (!queue.empty()) {
        Pair p = queue.top();
        queue.pop();
        Symbol& l = symbols[p.left];
        Symbol& r = symbols[p.right];
        if (l.size == 0 || r.size == 0 || l.size + r.size != p.size) continue;  // stale: one side merged since
        l.size += r.size;
        r.size = 0;
        l.next = r.next;
        if (r.next >= 0) symbols[r.next].prev = p.left;
        consider(l.prev, p.left);
        consider(p.left, l.next);
    }
    for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) {
        const Symbol& s = symbols[i];
        std::int32_t t = id(text.substr(s.begin, s.size));
        if (t >= 0) {
            out.push_back(t);
            continue;
        }
        for (std::size_t j = 0; j < s.size; ++j) {  // byte fallback
            std::int32_t b = byte_ids_[static_cast<unsigned char>(text[s.begin + j])];
            if (b < 0) throw std::runtime_error("tokenizer: no token for a byte of the text (no <0xXX> tokens)");
            out.push_back(b);
        }
    }
}

std::string SpmTokenizer::decode(std::int32_t token) const {
    if (token < 0 || static_cast<std::size_t>(token) >= vocab_.size()) return {};
    const std::string& text = vocab_[static_cast<std::size_t>(token)];
    switch (types_[static_cast<std::size_t>(token)]) {
    case normal: {
        std::string out;
        for (std::size_t i = 0; i < text.size(); ++i) {
            if (text.compare(i, kSpace.size(), kSpace) == 0) {
                out += ' ';
                i += kSpace.size() - 1;
            } else {
                out += text[i];
            }
        }
        return out;
    }
    case byte:  // <0xXX>
        return text.size() == 6 ? std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16))) : text;
    case user_defined: return text;
    default: return {};  // control, unknown, unused: nothing, as llama.cpp prints them
    }
}

}  // namespace

std::unique_ptr<TokenizerModel> make_spm_tokenizer(const GgufFile& file) { return std::make_unique<SpmTokenizer>(file); }

}  // namespace llama

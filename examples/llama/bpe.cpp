// Byte-level BPE (GPT-2 style) from a GGUF's vocabulary and merges, with the
// pre-tokenizer of tokenizer.ggml.pre = "smollm": every digit on its own, then
// GPT-2's split  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
#include <climits>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>

#include "tokenizer.hpp"

namespace llama {
namespace {

std::string utf8(std::uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xc0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        s += static_cast<char>(0xe0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        s += static_cast<char>(0xf0 | (cp >> 18));
        s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        s += static_cast<char>(0x80 | (cp & 0x3f));
    }
    return s;
}

struct CodePoint {
    std::uint32_t cp;
    std::size_t begin, end;  // byte range in the text
};

// UTF-8 to code points; a malformed byte stands for itself (as U+FFFD would).
std::vector<CodePoint> decode_utf8(std::string_view s) {
    std::vector<CodePoint> out;
    for (std::size_t i = 0; i < s.size();) {
        auto b = static_cast<unsigned char>(s[i]);
        int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
        bool ok = n > 0 && i + n <= s.size();
        std::uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1f) : n == 3 ? (b & 0x0f) : (b & 0x07);
        for (int k = 1; ok && k < n; ++k) {
            auto c = static_cast<unsigned char>(s[i + k]);
            ok = (c >> 6) == 2;
            cp = (cp << 6) | (c & 0x3f);
        }
        if (!ok) {
            out.push_back({0xfffd, i, i + 1});
            ++i;
        } else {
            out.push_back({cp, i, i + n});
            i += n;
        }
    }
    return out;
}

enum class Class { letter, number, space, other };

// Unicode classes for the pre-tokenizer's \p{L}, \p{N} and \s.  Exact for ASCII;
// beyond it, the number, space, mark and punctuation/symbol blocks that English
// text meets are listed, and the rest of the alphabetic planes count as letters.
Class classify(std::uint32_t c) {
    if (c < 0x80) {
        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return Class::letter;
        if (c >= '0' && c <= '9') return Class::number;
        if (c == ' ' || (c >= '\t' && c <= '\r')) return Class::space;
        return Class::other;
    }
    auto in = [c](std::uint32_t lo, std::uint32_t hi) { return c >= lo && c <= hi; };
    if (c == 0x85 || c == 0xa0 || c == 0x1680 || in(0x2000, 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
        c == 0x205f || c == 0x3000)
        return Class::space;
    if (c == 0xb2 || c == 0xb3 || c == 0xb9 || in(0xbc, 0xbe) || in(0x660, 0x669) || in(0x6f0, 0x6f9) ||
        in(0x966, 0x96f) || c == 0x2070 || in(0x2074, 0x2079) || in(0x2080, 0x2089) || in(0x2150, 0x2189) ||
        in(0x2460, 0x249b) || in(0xff10, 0xff19))
        return Class::number;
    if (c == 0xaa || c == 0xb5 || c == 0xba) return Class::letter;
    if (in(0x80, 0xbf) || c == 0xd7 || c == 0xf7 || in(0x300, 0x36f) || in(0x2000, 0x2bff) || in(0x3001, 0x303f) ||
        in(0xe000, 0xf8ff) || in(0xfe00, 0xfe0f) || in(0xff01, 0xff0f) || in(0x1f000, 0x1faff) || c == 0xfffd)
        return Class::other;
    return Class::letter;
}

// GPT-2's split of one chunk [b, e) of code points into pieces.
void split_gpt2(const std::vector<CodePoint>& cps, std::size_t b, std::size_t e, std::vector<std::pair<std::size_t, std::size_t>>& out) {
    auto cls = [&](std::size_t i) { return classify(cps[i].cp); };
    std::size_t i = b;
    while (i < e) {
        std::size_t j = i;
        auto ch = cps[i].cp;
        if (ch == '\'' && i + 1 < e) {  // contractions, lower case as in GPT-2
            auto c1 = cps[i + 1].cp, c2 = i + 2 < e ? cps[i + 2].cp : 0;
            if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') j = i + 2;
            else if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) j = i + 3;
        }
        if (j == i) {
            std::size_t k = (ch == ' ' && i + 1 < e && cls(i + 1) != Class::space) ? i + 1 : i;
            Class c = cls(k);
            if (c != Class::space) {  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
                j = k;
                while (j < e && cls(j) == c) ++j;
            } else {  // '\s+(?!\S)', else '\s+'
                j = i;
                while (j < e && cls(j) == Class::space) ++j;
                if (j < e && j - i > 1) --j;
            }
        }
        out.emplace_back(cps[i].begin, cps[j - 1].end);
        i = j;
    }
}

class BpeTokenizer final : public TokenizerModel {
public:
    explicit BpeTokenizer(const GgufFile& file);
    void encode(std::string_view text, std::vector<std::int32_t>& out) const override;
    std::string decode(std::int32_t token) const override;

private:
    void bpe(const std::string& piece, std::vector<std::int32_t>& out) const;
    std::int32_t byte_token(const std::string& stand_in) const;  // throws if the vocabulary lacks it

    std::vector<std::string> vocab_;
    std::unordered_map<std::string, std::int32_t> ids_;
    std::unordered_map<std::string, int> merge_rank_;  // "left right" -> rank
    std::string byte_char_[256];                       // byte -> its printable stand-in (UTF-8)
    std::unordered_map<std::string, unsigned char> char_byte_;
    mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache_;
};

BpeTokenizer::BpeTokenizer(const GgufFile& file) {
    vocab_ = file.strings("tokenizer.ggml.tokens");
    for (std::size_t i = 0; i < vocab_.size(); ++i) ids_.emplace(vocab_[i], static_cast<std::int32_t>(i));
    auto merges = file.strings("tokenizer.ggml.merges");
    for (std::size_t r = 0; r < merges.size(); ++r) merge_rank_.emplace(merges[r], static_cast<int>(r));
    // GPT-2's byte map: printable Latin-1 bytes stand for themselves, the others for 256 + n.
    int n = 0;
    for (int b = 0; b < 256; ++b) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
        byte_char_[b] = utf8(printable ? static_cast<std::uint32_t>(b) : static_cast<std::uint32_t>(256 + n++));
        char_byte_[byte_char_[b]] = static_cast<unsigned char>(b);
    }
}

std::int32_t BpeTokenizer::byte_token(const std::string& stand_in) const {
    if (auto it = ids_.find(stand_in); it != ids_.end()) return it->second;
    char byte[8];
    // words are made of byte stand-ins, so char_byte_ has this one
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned>(char_byte_.at(stand_in)));
    throw std::runtime_error("tokenizer: the vocabulary has no token for byte " + std::string(byte) + " ('" + stand_in +
                             "' in GPT-2's byte map), which the text needs");
}

void BpeTokenizer::bpe(const std::string& piece, std::vector<std::int32_t>& out) const {
    if (auto hit = cache_.find(piece); hit != cache_.end()) {
        out.insert(out.end(), hit->second.begin(), hit->second.end());
        return;
    }
    std::vector<std::string> word;
    for (unsigned char b : piece) word.push_back(byte_char_[b]);
    while (word.size() > 1) {  // merge the best-ranked adjacent pair until none is in the merges
        int best = INT_MAX;
        std::size_t at = 0;
        for (std::size_t i = 0; i + 1 < word.size(); ++i) {
            auto it = merge_rank_.find(word[i] + " " + word[i + 1]);
            if (it != merge_rank_.end() && it->second < best) {
                best = it->second;
                at = i;
            }
        }
        if (best == INT_MAX) break;
        word[at] += word[at + 1];
        word.erase(word.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    }
    std::vector<std::int32_t> ids;
    for (const auto& w : word) {
        if (auto it = ids_.find(w); it != ids_.end()) {
            ids.push_back(it->second);
        } else {  // not in the vocabulary: its bytes one by one
            for (const auto& cp : decode_utf8(w)) ids.push_back(byte_token(utf8(cp.cp)));
        }
    }
    out.insert(out.end(), ids.begin(), ids.end());
    cache_.emplace(piece, std::move(ids));
}

void BpeTokenizer::encode(std::string_view text, std::vector<std::int32_t>& out) const {
    auto cps = decode_utf8(text);
    std::vector<std::pair<std::size_t, std::size_t>> pieces;
    std::size_t chunk = 0;
    for (std::size_t i = 0; i <= cps.size(); ++i) {  // each digit is a chunk of its own
        if (i == cps.size() || classify(cps[i].cp) == Class::number) {
            if (chunk < i) split_gpt2(cps, chunk, i, pieces);
            if (i < cps.size()) pieces.emplace_back(cps[i].begin, cps[i].end);
            chunk = i + 1;
        }
    }
    for (auto [b, e] : pieces) bpe(std::string(text.substr(b, e - b)), out);
}

std::string BpeTokenizer::decode(std::int32_t token) const {
    if (token < 0 || static_cast<std::size_t>(token) >= vocab_.size()) return {};
    std::string out;
    for (const auto& cp : decode_utf8(vocab_[static_cast<std::size_t>(token)])) {
        auto it = char_byte_.find(utf8(cp.cp));
        if (it == char_byte_.end()) return vocab_[static_cast<std::size_t>(token)];  // a special token, as written
        out += static_cast<char>(it->second);
    }
    return out;
}

}  // namespace

std::unique_ptr<TokenizerModel> make_bpe_tokenizer(const GgufFile& file) { return std::make_unique<BpeTokenizer>(file); }

}  // namespace llama

#include "model.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "dequantize.hpp"
#include "matmul.hpp"

namespace llama {
namespace {

std::vector<float> load(const GgufFile& file, const std::string& name, std::uint64_t rows, std::uint64_t cols) {
    const Tensor& t = file.tensor(name);
    std::uint64_t r = t.shape.size() > 1 ? t.shape[1] : 1;
    if (t.shape[0] != cols || r != rows || t.elements() != rows * cols)
        throw std::runtime_error(name + ": shape does not match the model's metadata");
    return dequantize(t);
}

// x ← x / sqrt(mean(x²) + eps) ⊙ g, row by row.
void rms_norm(const float* x, const float* g, int rows, int dim, float eps, float* out) {
    for (int r = 0; r < rows; ++r) {
        const float* xr = x + static_cast<long>(r) * dim;
        double ss = 0;
        for (int i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
        float inv = static_cast<float>(1.0 / std::sqrt(ss / dim + eps));
        for (int i = 0; i < dim; ++i) out[static_cast<long>(r) * dim + i] = xr[i] * inv * g[i];
    }
}

// cos and sin of pos · base^(-2i/d) for pairs i < d/2 at positions pos .. pos+n-1.
std::vector<float> rope_table(int n, int d, int pos, float base) {
    std::vector<float> table(static_cast<std::size_t>(n) * d);
    for (int t = 0; t < n; ++t)
        for (int i = 0; i < d / 2; ++i) {
            double angle = (pos + t) * std::pow(static_cast<double>(base), -2.0 * i / d);
            table[static_cast<std::size_t>(t) * d + 2 * i] = static_cast<float>(std::cos(angle));
            table[static_cast<std::size_t>(t) * d + 2 * i + 1] = static_cast<float>(std::sin(angle));
        }
    return table;
}

// Rotates pairs (2i, 2i+1) of each head by the angle whose cos, sin are cs[2i], cs[2i+1].
void rope(float* x, int heads, int d, const float* cs) {
    for (int i = 0; i < d / 2; ++i) {
        float c = cs[2 * i], s = cs[2 * i + 1];
        for (int h = 0; h < heads; ++h) {
            float* p = x + h * d + 2 * i;
            float a = p[0], b = p[1];
            p[0] = a * c - b * s;
            p[1] = a * s + b * c;
        }
    }
}

}  // namespace

Model::Model(const GgufFile& file) {
    if (file.string("general.architecture") != "llama")
        throw std::runtime_error("architecture " + file.string("general.architecture") + " is not supported (llama is)");
    auto u = [&](const char* key) { return static_cast<int>(file.uint(std::string("llama.") + key)); };
    config_.layers = u("block_count");
    config_.dim = u("embedding_length");
    config_.heads = u("attention.head_count");
    config_.kv_heads = u("attention.head_count_kv");
    config_.ffn = u("feed_forward_length");
    config_.context = u("context_length");
    config_.rope_base = static_cast<float>(file.real("llama.rope.freq_base"));
    config_.norm_eps = static_cast<float>(file.real("llama.attention.layer_norm_rms_epsilon"));
    if (config_.heads <= 0 || config_.kv_heads <= 0 || config_.dim % config_.heads != 0 || config_.heads % config_.kv_heads != 0)
        throw std::runtime_error("inconsistent head counts in the model's metadata");
    config_.head_dim = config_.dim / config_.heads;
    if (config_.head_dim % 16 != 0 || config_.dim % 16 != 0 || config_.ffn % 16 != 0)
        throw std::runtime_error("dims must be multiples of 16 for this engine");
    const Tensor& embd = file.tensor("token_embd.weight");
    config_.vocab = static_cast<int>(embd.shape.size() > 1 ? embd.shape[1] : 0);

    auto dim = static_cast<std::uint64_t>(config_.dim), kv = static_cast<std::uint64_t>(config_.kv_heads * config_.head_dim),
         ffn = static_cast<std::uint64_t>(config_.ffn);
    embedding_ = load(file, "token_embd.weight", static_cast<std::uint64_t>(config_.vocab), dim);
    output_norm_ = load(file, "output_norm.weight", 1, dim);
    if (file.has_tensor("output.weight")) output_ = load(file, "output.weight", static_cast<std::uint64_t>(config_.vocab), dim);
    for (int l = 0; l < config_.layers; ++l) {
        std::string p = "blk." + std::to_string(l) + ".";
        layers_.push_back({load(file, p + "attn_norm.weight", 1, dim), load(file, p + "attn_q.weight", dim, dim),
                           load(file, p + "attn_k.weight", kv, dim), load(file, p + "attn_v.weight", kv, dim),
                           load(file, p + "attn_output.weight", dim, dim), load(file, p + "ffn_norm.weight", 1, dim),
                           load(file, p + "ffn_gate.weight", ffn, dim), load(file, p + "ffn_up.weight", ffn, dim),
                           load(file, p + "ffn_down.weight", dim, ffn)});
    }
}

std::vector<float> Model::forward(ThreadPool& pool, std::span<const std::int32_t> tokens, int pos, KvCache& cache,
                                  int logit_rows) const {
    const auto& c = config_;
    int n = static_cast<int>(tokens.size()), kv = c.kv_heads * c.head_dim;
    if (n == 0 || logit_rows < 0 || logit_rows > n) throw std::invalid_argument("forward: bad token or logit count");
    for (auto t : tokens)
        if (t < 0 || t >= c.vocab) throw std::invalid_argument("forward: token " + std::to_string(t) + " out of range");
    auto rows = [](int r, int width) { return std::vector<float>(static_cast<std::size_t>(r) * width); };
    auto x = rows(n, c.dim), h = rows(n, c.dim), q = rows(n, c.dim), k = rows(n, kv), v = rows(n, kv),
         att = rows(n, c.dim), proj = rows(n, c.dim), gate = rows(n, c.ffn), up = rows(n, c.ffn);
    auto angles = rope_table(n, c.head_dim, pos, c.rope_base);  // the same in every layer
    for (int t = 0; t < n; ++t)
        std::copy_n(&embedding_[static_cast<std::size_t>(tokens[t]) * c.dim], c.dim, &x[static_cast<std::size_t>(t) * c.dim]);

    for (int l = 0; l < c.layers; ++l) {
        const Layer& w = layers_[l];
        rms_norm(x.data(), w.attn_norm.data(), n, c.dim, c.norm_eps, h.data());
        matmul(pool, h.data(), n, c.dim, w.wq.data(), c.dim, q.data());
        matmul(pool, h.data(), n, c.dim, w.wk.data(), kv, k.data());
        matmul(pool, h.data(), n, c.dim, w.wv.data(), kv, v.data());
        for (int t = 0; t < n; ++t) {  // causal: token t sees positions up to pos + t
            const float* cs = &angles[static_cast<std::size_t>(t) * c.head_dim];
            rope(&q[static_cast<std::size_t>(t) * c.dim], c.heads, c.head_dim, cs);
            rope(&k[static_cast<std::size_t>(t) * kv], c.kv_heads, c.head_dim, cs);
            cache.attend(l, pos + t, &q[static_cast<std::size_t>(t) * c.dim], c.heads, &k[static_cast<std::size_t>(t) * kv],
                         &v[static_cast<std::size_t>(t) * kv], &att[static_cast<std::size_t>(t) * c.dim]);
        }
        matmul(pool, att.data(), n, c.dim, w.wo.data(), c.dim, proj.data());
        for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];

        rms_norm(x.data(), w.ffn_norm.data(), n, c.dim, c.norm_eps, h.data());
        matmul(pool, h.data(), n, c.dim, w.gate.data(), c.ffn, gate.data());
        matmul(pool, h.data(), n, c.dim, w.up.data(), c.ffn, up.data());
        for (std::size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];  // SwiGLU
        matmul(pool, gate.data(), n, c.ffn, w.down.data(), c.dim, proj.data());
        for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
    }

    std::vector<float> logits(static_cast<std::size_t>(logit_rows) * c.vocab);
    if (logit_rows == 0) return logits;
    const float* last = &x[static_cast<std::size_t>(n - logit_rows) * c.dim];
    rms_norm(last, output_norm_.data(), logit_rows, c.dim, c.norm_eps, h.data());
    matmul(pool, h.data(), logit_rows, c.dim, output_.empty() ? embedding_.data() : output_.data(), c.vocab, logits.data());
    return logits;
}

}  // namespace llama

#include "model.hpp"

#include <cmath>
#include <limits>
#include <map>
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

// x ← x / sqrt(mean(x²) + eps) ⊙ g, row by row (out may be x).
void rms_norm(const float* x, const float* g, int rows, int dim, float eps, float* out) {
    for (int r = 0; r < rows; ++r) {
        const float* xr = x + static_cast<long>(r) * dim;
        double ss = 0;
        for (int i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
        float inv = static_cast<float>(1.0 / std::sqrt(ss / dim + eps));
        for (int i = 0; i < dim; ++i) out[static_cast<long>(r) * dim + i] = xr[i] * inv * g[i];
    }
}

// cos and sin of pos · base^(-2i/d) for i < d/2 at positions pos .. pos+n-1.
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

// Rotates, in each head, the pairs (2i, 2i+1) (llama's layout in GGUF) or (i, i + d/2)
// (NeoX, Gemma) by the angle whose cos, sin are cs[2i], cs[2i+1].
void rope(float* x, int heads, int d, const float* cs, bool neox) {
    int stride = neox ? 1 : 2, offset = neox ? d / 2 : 1;
    for (int i = 0; i < d / 2; ++i) {
        float c = cs[2 * i], s = cs[2 * i + 1];
        for (int h = 0; h < heads; ++h) {
            float* p = x + h * d + stride * i;
            float a = p[0], b = p[offset];
            p[0] = a * c - b * s;
            p[offset] = a * s + b * c;
        }
    }
}

// 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³))): GELU's tanh approximation, as Gemma uses.
float gelu(float x) {
    constexpr float k = 0.7978845608028654f;  // sqrt(2/π)
    return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

}  // namespace

ModelConfig common_config(const GgufFile& file, const std::string& arch) {
    auto u = [&](const char* key) { return file.count(arch + "." + key); };
    ModelConfig c;
    c.arch = arch;
    c.layers = u("block_count");
    if (static_cast<std::size_t>(c.layers) > file.tensor_count())  // each layer has tensors: bounds what is allocated per layer
        throw std::runtime_error("block_count " + std::to_string(c.layers) + " exceeds the file's " +
                                 std::to_string(file.tensor_count()) + " tensors");
    c.dim = u("embedding_length");
    c.heads = u("attention.head_count");
    c.kv_heads = u("attention.head_count_kv");
    c.ffn = u("feed_forward_length");
    c.context = u("context_length");
    c.norm_eps = static_cast<float>(file.real(arch + ".attention.layer_norm_rms_epsilon"));
    return c;
}

ModelConfig llama_config(const GgufFile& file) {
    ModelConfig c = common_config(file, "llama");
    if (c.heads <= 0 || c.dim % c.heads != 0) throw std::runtime_error("inconsistent head counts in the model's metadata");
    c.head_dim = c.dim / c.heads;
    c.layer.assign(static_cast<std::size_t>(std::max(c.layers, 0)), {static_cast<float>(file.real("llama.rope.freq_base")), 0});
    return c;
}

Model::Model(const GgufFile& file) {
    std::string arch = file.string("general.architecture");
    if (arch == "llama") config_ = llama_config(file);
    else if (arch == "gemma3") config_ = gemma3_config(file);
    else throw std::runtime_error("architecture " + shown(arch) + " is not supported (llama and gemma3 are)");
    auto& c = config_;
    if (c.layers <= 0 || c.heads <= 0 || c.kv_heads <= 0 || c.heads % c.kv_heads != 0 || c.head_dim <= 0 ||
        std::int64_t{c.heads} * c.head_dim > std::numeric_limits<int>::max())
        throw std::runtime_error("inconsistent head counts in the model's metadata");
    if (c.head_dim % 16 != 0 || c.dim % 16 != 0 || c.ffn % 16 != 0)
        throw std::runtime_error("dims must be multiples of 16 for this engine");
    const Tensor& embd = file.tensor("token_embd.weight");
    c.vocab = static_cast<int>(embd.shape.size() > 1 ? embd.shape[1] : 0);

    auto dim = static_cast<std::uint64_t>(c.dim), q = static_cast<std::uint64_t>(c.heads * c.head_dim),
         kv = static_cast<std::uint64_t>(c.kv_heads * c.head_dim), ffn = static_cast<std::uint64_t>(c.ffn),
         hd = static_cast<std::uint64_t>(c.head_dim);
    embedding_ = load(file, "token_embd.weight", static_cast<std::uint64_t>(c.vocab), dim);
    output_norm_ = load(file, "output_norm.weight", 1, dim);
    if (file.has_tensor("output.weight")) output_ = load(file, "output.weight", static_cast<std::uint64_t>(c.vocab), dim);
    for (int l = 0; l < c.layers; ++l) {
        std::string p = "blk." + std::to_string(l) + ".";
        Layer w;
        w.attn_norm = load(file, p + "attn_norm.weight", 1, dim);
        w.wq = load(file, p + "attn_q.weight", q, dim);
        w.wk = load(file, p + "attn_k.weight", kv, dim);
        w.wv = load(file, p + "attn_v.weight", kv, dim);
        w.wo = load(file, p + "attn_output.weight", dim, q);
        w.ffn_norm = load(file, p + "ffn_norm.weight", 1, dim);
        w.gate = load(file, p + "ffn_gate.weight", ffn, dim);
        w.up = load(file, p + "ffn_up.weight", ffn, dim);
        w.down = load(file, p + "ffn_down.weight", dim, ffn);
        if (c.qk_norm) {
            w.q_norm = load(file, p + "attn_q_norm.weight", 1, hd);
            w.k_norm = load(file, p + "attn_k_norm.weight", 1, hd);
        }
        if (c.post_norms) {
            w.post_attn_norm = load(file, p + "post_attention_norm.weight", 1, dim);
            w.post_ffn_norm = load(file, p + "post_ffw_norm.weight", 1, dim);
        }
        layers_.push_back(std::move(w));
    }
}

CacheShape Model::cache_shape(int max_positions) const {
    CacheShape shape{config_.layers, config_.kv_heads, config_.head_dim, max_positions, {}};
    for (const auto& l : config_.layer) shape.windows.push_back(l.window);
    return shape;
}

std::vector<float> Model::hidden(ThreadPool& pool, std::span<const std::int32_t> tokens, int pos, KvCache& cache) const {
    const auto& c = config_;
    int n = static_cast<int>(tokens.size()), qd = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
    if (n == 0) throw std::invalid_argument("forward: no tokens");
    for (auto t : tokens)
        if (t < 0 || t >= c.vocab) throw std::invalid_argument("forward: token " + std::to_string(t) + " out of range");
    auto rows = [](int r, int width) { return std::vector<float>(static_cast<std::size_t>(r) * width); };
    auto x = rows(n, c.dim), h = rows(n, c.dim), q = rows(n, qd), k = rows(n, kv), v = rows(n, kv), att = rows(n, qd),
         proj = rows(n, c.dim), gate = rows(n, c.ffn), up = rows(n, c.ffn);
    std::map<float, std::vector<float>> angles;  // per RoPE base, the same in every layer with it
    for (const auto& l : c.layer)
        if (!angles.count(l.rope_base)) angles[l.rope_base] = rope_table(n, c.head_dim, pos, l.rope_base);
    for (int t = 0; t < n; ++t)
        for (int i = 0; i < c.dim; ++i)
            x[static_cast<std::size_t>(t) * c.dim + i] = embedding_[static_cast<std::size_t>(tokens[t]) * c.dim + i] * c.embed_scale;

    for (int l = 0; l < c.layers; ++l) {
        const Layer& w = layers_[l];
        const auto& table = angles.at(c.layer[l].rope_base);
        rms_norm(x.data(), w.attn_norm.data(), n, c.dim, c.norm_eps, h.data());
        matmul(pool, h.data(), n, c.dim, w.wq.data(), qd, q.data());
        matmul(pool, h.data(), n, c.dim, w.wk.data(), kv, k.data());
        matmul(pool, h.data(), n, c.dim, w.wv.data(), kv, v.data());
        if (c.qk_norm) {  // each head of each token is a row
            rms_norm(q.data(), w.q_norm.data(), n * c.heads, c.head_dim, c.norm_eps, q.data());
            rms_norm(k.data(), w.k_norm.data(), n * c.kv_heads, c.head_dim, c.norm_eps, k.data());
        }
        for (int t = 0; t < n; ++t) {
            const float* cs = &table[static_cast<std::size_t>(t) * c.head_dim];
            rope(&q[static_cast<std::size_t>(t) * qd], c.heads, c.head_dim, cs, c.rope_neox);
            rope(&k[static_cast<std::size_t>(t) * kv], c.kv_heads, c.head_dim, cs, c.rope_neox);
        }
        // causal: token t sees positions up to pos + t
        cache.attend_batch(l, pos, n, q.data(), c.heads, k.data(), v.data(), att.data());
        matmul(pool, att.data(), n, qd, w.wo.data(), c.dim, proj.data());
        if (c.post_norms) rms_norm(proj.data(), w.post_attn_norm.data(), n, c.dim, c.norm_eps, proj.data());
        for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];

        rms_norm(x.data(), w.ffn_norm.data(), n, c.dim, c.norm_eps, h.data());
        matmul(pool, h.data(), n, c.dim, w.gate.data(), c.ffn, gate.data());
        matmul(pool, h.data(), n, c.dim, w.up.data(), c.ffn, up.data());
        if (c.gelu) {
            for (std::size_t i = 0; i < gate.size(); ++i) gate[i] = gelu(gate[i]) * up[i];  // GeGLU
        } else {
            for (std::size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];  // SwiGLU
        }
        matmul(pool, gate.data(), n, c.ffn, w.down.data(), c.dim, proj.data());
        if (c.post_norms) rms_norm(proj.data(), w.post_ffn_norm.data(), n, c.dim, c.norm_eps, proj.data());
        for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
    }
    rms_norm(x.data(), output_norm_.data(), n, c.dim, c.norm_eps, x.data());
    return x;
}

void Model::logits(ThreadPool& pool, const float* hidden, int rows, float* out) const {
    if (rows > 0)
        matmul(pool, hidden, rows, config_.dim, output_.empty() ? embedding_.data() : output_.data(), config_.vocab, out);
}

std::vector<float> Model::forward(ThreadPool& pool, std::span<const std::int32_t> tokens, int pos, KvCache& cache,
                                  int logit_rows) const {
    int n = static_cast<int>(tokens.size());
    if (n == 0 || logit_rows < 0 || logit_rows > n) throw std::invalid_argument("forward: bad token or logit count");
    auto x = hidden(pool, tokens, pos, cache);
    std::vector<float> out(static_cast<std::size_t>(logit_rows) * config_.vocab);
    logits(pool, &x[static_cast<std::size_t>(n - logit_rows) * config_.dim], logit_rows, out.data());
    return out;
}

}  // namespace llama

// `tq eval`: TurboQuant's fidelity on the user's own activations (.npy): per
// configuration, key and value MSE and cosine, and attention-output cosine against
// FP32 attention over the same keys and values.
#include "args.hpp"
#include "commands.hpp"
#include "npy.hpp"

#include "fp32_attention.hpp"
#include "turboquant/turboquant.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace tq::cli {
namespace {

constexpr const char* kUsage =
    "usage: tq eval --keys K.npy --values V.npy [--queries Q.npy] [--k-bits B --v-bits B] [--seed S] [--json]\n"
    "  K, V: float32 or float16 .npy arrays of shape [tokens, kv_heads, head_dim] (e.g. one layer's\n"
    "  post-RoPE keys and its values). Q: [queries, q_heads, head_dim], q_heads a multiple of\n"
    "  kv_heads (GQA); each query attends over all tokens. Without Q, the keys of up to 32 positions\n"
    "  spread over the sequence serve as queries. Prints, per configuration (--k-bits/--v-bits, or\n"
    "  K4/V2, K4/V3, K4/V4, K3/V2 where built): bytes per token, key and value relative MSE and\n"
    "  cosine, and attention-output cosine (mean, min) against FP32 attention.\n";

struct Tensor3 {
    std::size_t n = 0, heads = 0, d = 0;
    std::vector<float> data;
};

Tensor3 load(const Args& args, const std::string& flag) {
    const std::string path = args.value(flag);
    NpyArray a = read_npy(path);
    if (a.shape.size() != 3 || a.shape[0] == 0 || a.shape[1] == 0 || a.shape[2] == 0)
        throw NpyError(path + ": shape must be [tokens, heads, head_dim], all nonzero");
    for (float x : a.data)
        if (!std::isfinite(x)) throw NpyError(path + ": holds NaN or Inf");
    return {a.shape[0], a.shape[1], a.shape[2], std::move(a.data)};
}

struct Result {
    float kb, vb;
    std::size_t bytes_per_token = 0;
    double key_mse = 0, value_mse = 0, key_cos = 0, value_cos = 0, attn_cos = 0, attn_min = 1;
};

// Mean relative squared error and mean cosine of the decoded vectors.
void fidelity(const std::vector<float>& x, const std::vector<float>& y, std::size_t d, double& mse, double& cos) {
    const std::size_t count = x.size() / d;
    std::size_t used = 0;
    mse = cos = 0;
    for (std::size_t i = 0; i < count; ++i) {
        double e = 0, n = 0;
        for (std::size_t j = 0; j < d; ++j) {
            const double a = x[i * d + j], b = y[i * d + j];
            e += (a - b) * (a - b);
            n += a * a;
        }
        if (n == 0) continue;  // an all-zero vector has no relative error
        mse += e / n;
        cos += tq::reference::cosine(&x[i * d], &y[i * d], d);
        ++used;
    }
    if (!used) throw NpyError("every vector is zero: nothing to measure");
    mse /= double(used), cos /= double(used);
}

Result evaluate(const Tensor3& k, const Tensor3& v, const Tensor3& q, float kb, float vb, std::uint64_t seed) {
    const int d = int(k.d), heads = int(k.heads), n = int(k.n);
    const Quantizer quant(d, {kb, vb}, seed);
    KVCache cache(quant, 1, heads, n);
    const std::size_t token = std::size_t(heads) * d;
    for (int t = 0; t < n; ++t) {
        cache.quantize(0, t, {&k.data[t * token], token}, Kind::key);
        cache.quantize(0, t, {&v.data[t * token], token}, Kind::value);
    }
    Result r{kb, vb};
    r.bytes_per_token = cache.bytes_per_token();
    std::vector<float> decoded(k.data.size());
    cache.dequantize(0, 0, n, Kind::key, decoded);
    fidelity(k.data, decoded, k.d, r.key_mse, r.key_cos);
    cache.dequantize(0, 0, n, Kind::value, decoded);
    fidelity(v.data, decoded, v.d, r.value_mse, r.value_cos);

    const std::size_t qtoken = q.heads * q.d;
    std::vector<float> out(qtoken), want(qtoken), scratch(n);
    std::size_t rows = 0;
    for (std::size_t i = 0; i < q.n; ++i) {
        const float* qi = &q.data[i * qtoken];
        // attention at the last position re-writes that token with the same values
        cache.attention(0, n - 1, {qi, qtoken}, {&k.data[(n - 1) * token], token}, {&v.data[(n - 1) * token], token},
                        out);
        tq::reference::fp32_attention(qi, int(q.heads), k.data.data(), v.data.data(), n, heads, d,
                                      1 / std::sqrt(float(d)), scratch.data(), want.data());
        for (std::size_t h = 0; h < q.heads; ++h) {
            const double c = tq::reference::cosine(&out[h * q.d], &want[h * q.d], q.d);
            r.attn_cos += c;
            r.attn_min = std::min(r.attn_min, c);
            ++rows;
        }
    }
    r.attn_cos /= double(rows);
    return r;
}

bool built(int d, float kb, float vb) {
    const tq_kernels* k = nullptr;
    return tq_find(d, kb, vb, &k) == TQ_OK;
}

}  // namespace

int eval(int argc, char** argv) {
    const Args args("eval", kUsage, argc, argv, {"--keys", "--values", "--queries", "--k-bits", "--v-bits", "--seed"},
                    {"--json"});
    if (!args.has("--keys") || !args.has("--values")) args.fail("--keys and --values are required");
    if (args.has("--k-bits") != args.has("--v-bits")) args.fail("give both --k-bits and --v-bits, or neither");
    try {
        const Tensor3 k = load(args, "--keys"), v = load(args, "--values");
        if (k.n != v.n || k.heads != v.heads || k.d != v.d)
            throw NpyError("keys and values differ in shape ([" + std::to_string(k.n) + ", " +
                           std::to_string(k.heads) + ", " + std::to_string(k.d) + "] vs [" + std::to_string(v.n) +
                           ", " + std::to_string(v.heads) + ", " + std::to_string(v.d) + "])");
        Tensor3 q;
        if (args.has("--queries")) {
            q = load(args, "--queries");
            if (q.d != k.d || q.heads % k.heads)
                throw NpyError("queries must be [n, q_heads, " + std::to_string(k.d) + "] with q_heads a multiple of " +
                               std::to_string(k.heads));
        } else {  // keys at up to 32 positions spread over the sequence
            q = {std::min<std::size_t>(32, k.n), k.heads, k.d, {}};
            for (std::size_t i = 0; i < q.n; ++i) {
                const std::size_t t = i * (k.n - 1) / std::max<std::size_t>(1, q.n - 1);
                q.data.insert(q.data.end(), k.data.begin() + t * k.heads * k.d, k.data.begin() + (t + 1) * k.heads * k.d);
            }
        }
        std::vector<std::pair<float, float>> configs;
        if (args.has("--k-bits")) configs.push_back({float(args.number("--k-bits", 4)), float(args.number("--v-bits", 2))});
        else
            for (auto c : {std::pair{4.0f, 2.0f}, {4.0f, 3.0f}, {4.0f, 4.0f}, {3.0f, 2.0f}})
                if (built(int(k.d), c.first, c.second)) configs.push_back(c);
        if (configs.empty())
            throw Error(TQ_ERROR_UNSUPPORTED, "no default configuration (K4/V2, K4/V3, K4/V4, K3/V2) is built for head_dim " +
                                                  std::to_string(k.d) + "; pass --k-bits and --v-bits");
        const auto seed = std::uint64_t(args.integer("--seed", 42, 0, 1 << 30));
        std::vector<Result> results;
        for (auto [kb, vb] : configs) results.push_back(evaluate(k, v, q, kb, vb, seed));

        const double fp32_bytes = 2.0 * 4 * double(k.heads * k.d);
        if (args.flag("--json")) {
            std::printf("{\n  \"tokens\": %zu, \"kv_heads\": %zu, \"head_dim\": %zu, \"queries\": %zu, \"q_heads\": %zu,\n"
                        "  \"fp32_bytes_per_token\": %.0f,\n  \"configs\": [",
                        k.n, k.heads, k.d, q.n, q.heads, fp32_bytes);
            for (std::size_t i = 0; i < results.size(); ++i) {
                const Result& r = results[i];
                std::printf("%s\n    {\"key_bits\": %g, \"value_bits\": %g, \"bytes_per_token\": %zu, \"key_mse\": %.6g, "
                            "\"value_mse\": %.6g, \"key_cosine\": %.6f, \"value_cosine\": %.6f, "
                            "\"attention_cosine_mean\": %.6f, \"attention_cosine_min\": %.6f}",
                            i ? "," : "", double(r.kb), double(r.vb), r.bytes_per_token, r.key_mse, r.value_mse,
                            r.key_cos, r.value_cos, r.attn_cos, r.attn_min);
            }
            std::printf("\n  ]\n}\n");
            return 0;
        }
        std::printf("%zu tokens x %zu KV heads x head_dim %zu; %zu queries x %zu heads%s\n\n", k.n, k.heads, k.d, q.n,
                    q.heads, args.has("--queries") ? "" : " (keys as queries)");
        std::printf("%-10s %11s %8s %10s %10s %10s %10s %12s %12s\n", "config", "bytes/token", "vs FP32", "key MSE",
                    "value MSE", "key cos", "value cos", "attn cos", "attn cos min");
        for (const Result& r : results) {
            char name[32];
            std::snprintf(name, sizeof name, "K%g/V%g", double(r.kb), double(r.vb));
            std::printf("%-10s %11zu %7.2fx %10.5f %10.5f %10.5f %10.5f %12.6f %12.6f\n", name, r.bytes_per_token,
                        fp32_bytes / double(r.bytes_per_token), r.key_mse, r.value_mse, r.key_cos, r.value_cos,
                        r.attn_cos, r.attn_min);
        }
    } catch (const NpyError& e) {
        std::fprintf(stderr, "tq eval: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {  // tq::Error and anything else: one line, no abort
        std::fprintf(stderr, "tq eval: %s\n", e.what());
        return 1;
    }
    return 0;
}

}  // namespace tq::cli

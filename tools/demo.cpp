// `tq demo`: a compressed KV cache of the spec's RWKV-X size against FP32.
#include "commands.hpp"
#include "fp32_attention.hpp"
#include "synthetic_kv.hpp"

#include "turboquant/turboquant.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace tq::cli {
namespace {

constexpr const char* kUsage =
    "usage: tq demo [--positions N] [--seed S]\n"
    "  Builds a KV cache of 4 layers x 16 KV heads x head_dim 128 x N positions (default 2048, the\n"
    "  spec's RWKV-X size) from synthetic activations and prints, for K4/V2, K4/V3, K4/V4, K3/V2 and\n"
    "  FP32: bytes, attention-output cosine vs FP32 attention, and time per decode step; then the\n"
    "  norm vs least-squares scale comparison and every compiled variant's codec figures.\n";

constexpr int kLayers = 4, kHeads = 16, kHeadDim = 128, kQueries = 8, kTimedSteps = 5;

struct Options {
    int positions = 2048;
    std::uint64_t seed = 42;
};

bool parse(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        }
        if (i + 1 >= argc) return false;
        char* end = nullptr;
        const long long v = std::strtoll(argv[++i], &end, 10);
        if (*end != '\0' || v <= 0) return false;
        if (arg == "--positions" && v >= 2 && v <= 65536) o.positions = int(v);
        else if (arg == "--seed") o.seed = std::uint64_t(v);
        else return false;
    }
    return true;
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

void progress(const std::string& what) {
    std::fprintf(stderr, "  ... %s\n", what.c_str());
    std::fflush(stderr);
}

struct Fidelity {
    double cosine_mean = 0, cosine_min = 1, key_mse = 0, value_mse = 0, step_ms = 0;
    std::size_t bytes_per_token = 0;
};

// Relative MSE of one layer's decoded keys or values, mean over (position, head).
double relative_mse(const SyntheticKV& kv, const KVCache& cache, int layer, Kind kind) {
    std::vector<float> decoded(std::size_t(kv.positions) * kHeads * kHeadDim);
    cache.dequantize(layer, 0, kv.positions, kind, decoded);
    const float* original = kind == Kind::key ? kv.key(layer, 0) : kv.value(layer, 0);
    double sum = 0;
    for (std::size_t v = 0; v < decoded.size() / kHeadDim; ++v) {
        double err = 0, norm = 0;
        for (int i = 0; i < kHeadDim; ++i) {
            const double x = original[v * kHeadDim + i], e = x - decoded[v * kHeadDim + i];
            err += e * e;
            norm += x * x;
        }
        sum += err / norm;
    }
    return sum / double(decoded.size() / kHeadDim);
}

// Fills a compressed cache with positions 0..P-2, then attends every query at
// P-1 (which quantizes that token's K and V) and compares with FP32.
Fidelity measure(const SyntheticKV& kv, const std::vector<float>& reference, Config config, bool timed) {
    const Quantizer quant(kHeadDim, config, 7);
    KVCache cache(quant, kLayers, kHeads, kv.positions);
    const std::size_t token = std::size_t(kHeads) * kHeadDim;
    const int last = kv.positions - 1;
    for (int l = 0; l < kLayers; ++l)
        for (int t = 0; t < last; ++t) {
            cache.quantize(l, t, {kv.key(l, t), token}, Kind::key);
            cache.quantize(l, t, {kv.value(l, t), token}, Kind::value);
        }
    Fidelity f;
    f.bytes_per_token = cache.bytes_per_token();
    std::vector<float> out(token);
    double sum = 0;
    for (int l = 0; l < kLayers; ++l)
        for (int i = 0; i < kQueries; ++i) {
            cache.attention(l, last, {kv.query(l, i), token}, {kv.key(l, last), token}, {kv.value(l, last), token},
                            out);
            for (int h = 0; h < kHeads; ++h) {
                const double c = reference::cosine(&out[h * kHeadDim],
                                                   &reference[((std::size_t(l) * kQueries + i) * kHeads + h) * kHeadDim],
                                                   kHeadDim);
                sum += c;
                f.cosine_min = std::min(f.cosine_min, c);
            }
        }
    f.cosine_mean = sum / (kLayers * kQueries * kHeads);
    for (int l = 0; l < kLayers; ++l) {
        f.key_mse += relative_mse(kv, cache, l, Kind::key) / kLayers;
        f.value_mse += relative_mse(kv, cache, l, Kind::value) / kLayers;
    }
    if (timed) {  // one decode step = every layer's attention for one token; best of several
        f.step_ms = 1e30;
        for (int r = 0; r < kTimedSteps; ++r) {
            const auto t0 = Clock::now();
            for (int l = 0; l < kLayers; ++l)
                cache.attention(l, last, {kv.query(l, 0), token}, {kv.key(l, last), token},
                                {kv.value(l, last), token}, out);
            f.step_ms = std::min(f.step_ms, ms_since(t0));
        }
    }
    return f;
}

// FP32 attention of every query over the whole cache, and the best time of one
// decode step (append this token's K and V to the float cache, attend, every layer).
double fp32_reference(const SyntheticKV& kv, std::vector<float>& reference) {
    const std::size_t token = std::size_t(kHeads) * kHeadDim;
    const float scale = 1 / std::sqrt(float(kHeadDim));
    std::vector<float> scores(kv.positions), cache_k(kv.keys), cache_v(kv.values), out(token);
    reference.resize(std::size_t(kLayers) * kQueries * token);
    for (int l = 0; l < kLayers; ++l)
        for (int i = 0; i < kQueries; ++i)
            reference::fp32_attention(kv.query(l, i), kHeads, kv.key(l, 0), kv.value(l, 0), kv.positions, kHeads,
                                      kHeadDim, scale, scores.data(), &reference[(std::size_t(l) * kQueries + i) * token]);
    double best = 1e30;
    const int last = kv.positions - 1;
    for (int r = 0; r < kTimedSteps; ++r) {
        const auto t0 = Clock::now();
        for (int l = 0; l < kLayers; ++l) {
            std::copy_n(kv.key(l, last), token, &cache_k[kv.index(l, last)]);
            std::copy_n(kv.value(l, last), token, &cache_v[kv.index(l, last)]);
            reference::fp32_attention(kv.query(l, 0), kHeads, &cache_k[kv.index(l, 0)], &cache_v[kv.index(l, 0)],
                                      kv.positions, kHeads, kHeadDim, scale, scores.data(), out.data());
        }
        best = std::min(best, ms_since(t0));
    }
    return best;
}

bool built(float kb, float vb) {
    const tq_kernels* k = nullptr;
    return tq_find(kHeadDim, kb, vb, &k) == TQ_OK;
}

}  // namespace

int demo(int argc, char** argv) {
    Options opt;
    if (!parse(argc, argv, opt)) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    const struct {
        float kb, vb;
    } configs[] = {{4, 2}, {4, 3}, {4, 4}, {3, 2}};

    std::printf("TurboQuant demo: KV cache of %d layers x %d KV heads x head_dim %d x %d positions (the spec's "
                "RWKV-X size),\n%d query heads, synthetic activations (tools/synthetic_kv.hpp: correlated channels, "
                "outlier key channels,\nper-head key bias, per-token norm variation); cosine over %d layers x %d "
                "queries x %d heads.\n\n",
                kLayers, kHeads, kHeadDim, opt.positions, kHeads, kLayers, kQueries, kHeads);
    progress("generating synthetic keys, values and queries");
    const SyntheticKV kv = make_synthetic_kv(kLayers, kHeads, opt.positions, kHeadDim, kQueries, opt.seed);
    progress("FP32 reference attention");
    std::vector<float> reference;
    const double fp32_ms = fp32_reference(kv, reference);
    const double fp32_token = double(kLayers) * kHeads * kHeadDim * 4 * 2;

    std::vector<std::string> rows;
    char line[256];
    std::snprintf(line, sizeof line, "%-7s %12s %10s %8s %12s %10s %13s %8s", "config", "bytes/token", "cache MiB",
                  "vs FP32", "cosine mean", "cosine min", "decode ms", "vs FP32");
    rows.push_back(line);
    std::snprintf(line, sizeof line, "%-7s %12.0f %10.1f %7.2fx %12.6f %10.6f %13.3f %7.2fx", "FP32", fp32_token,
                  fp32_token * opt.positions / (1 << 20), 1.0, 1.0, 1.0, fp32_ms, 1.0);
    rows.push_back(line);
    std::vector<std::string> scale_rows;
    std::snprintf(line, sizeof line, "%-7s %-14s %12s %12s %12s", "config", "scale", "key MSE", "value MSE",
                  "cosine mean");
    scale_rows.push_back(line);
    for (const auto& c : configs) {
        char name[32];
        std::snprintf(name, sizeof name, "K%g/V%g", double(c.kb), double(c.vb));
        if (!built(c.kb, c.vb)) {
            std::snprintf(line, sizeof line, "%-7s (not in this build: configure head dim 128 and bits %g, %g)",
                          name, double(c.kb), double(c.vb));
            rows.push_back(line);
            continue;
        }
        progress(std::string(name) + ": quantizing, attending, timing");
        const Fidelity f = measure(kv, reference, {c.kb, c.vb, FA_TQ_SCALE_DEFAULT}, true);
        std::snprintf(line, sizeof line, "%-7s %12zu %10.1f %7.2fx %12.6f %10.6f %13.3f %7.2fx", name,
                      f.bytes_per_token, double(f.bytes_per_token) * opt.positions / (1 << 20),
                      fp32_token / double(f.bytes_per_token), f.cosine_mean, f.cosine_min, f.step_ms,
                      f.step_ms / fp32_ms);
        rows.push_back(line);
        for (auto [scale, label] : {std::pair{FA_TQ_SCALE_NORM, "norm"}, std::pair{FA_TQ_SCALE_LEAST_SQUARES,
                                                                                  "least-squares"}}) {
            const Fidelity s = measure(kv, reference, {c.kb, c.vb, scale}, false);
            std::snprintf(line, sizeof line, "%-7s %-14s %12.6f %12.6f %12.6f", name, label, s.key_mse,
                          s.value_mse, s.cosine_mean);
            scale_rows.push_back(line);
        }
    }
    std::printf("\n");
    for (const auto& r : rows) std::printf("%s\n", r.c_str());
    std::printf("\ndecode ms: one decode step, all %d layers (quantize the token's K and V, attend %d query heads "
                "over %d positions), best of %d.\nvs FP32 for time: ratio of times (lower is faster).\n",
                kLayers, kHeads, opt.positions, kTimedSteps);
    std::printf("\nScale per vector (same data): MSE = mean |x - x_hat|^2 / |x|^2 over all cached vectors\n\n");
    for (const auto& r : scale_rows) std::printf("%s\n", r.c_str());
    std::printf("\n");
    print_variant_table(2000, opt.seed);
    return 0;
}

}  // namespace tq::cli

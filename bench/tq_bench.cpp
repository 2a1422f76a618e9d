// tq-bench: the kernels against their baselines, per ISA, as ratios measured in
// one run (Google Benchmark).  Prints Google Benchmark's table, then the summary
// of docs/benchmarks.md: each figure, its baseline, the ratio and the target.
#include "baselines.hpp"
#include "bench_support.hpp"
#include "cache_line_allocator.hpp"

#include "turboquant/registry.hpp"
#include "turboquant/turboquant.h"

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using tq::bench::cpu_model;
using tq::bench::fill;

constexpr int kDim = 128;
constexpr int kHeads = 16;
// 8M keys: 544 MB of codes and scales, beyond the last-level cache (480 MiB here).
constexpr std::size_t kDramKeys = std::size_t(1) << 23, kCachedKeys = 4096;
constexpr int kSeqs[] = {2048, 8192, 32768};

const tq_kernels& kernels(const std::string& isa, float kb, float vb) {
    const tq_kernels* k = nullptr;
    if (tq_find_isa(isa.c_str(), kDim, kb, vb, &k) != TQ_OK) throw std::runtime_error(tq_last_error());
    return *k;
}

struct Vectors {
    std::vector<float> signs = tq::rotation_signs(kDim, 1), x, q;
    Vectors() : x(kDim), q(kDim) {
        fill(x, 2);
        fill(q, 3);
    }
};
const Vectors& vectors() {
    static const Vectors v;
    return v;
}

// n packed K4 keys (and their scales) encoded by `isa`.
struct PackedKeys {
    std::vector<std::uint8_t, tq::detail::CacheLineAllocator<std::uint8_t>> codes;  // aligned as a cache's stream
    std::vector<float, tq::detail::CacheLineAllocator<float>> scales;  // aligned as a cache's stream
    std::vector<float> plain;  // the uncompressed keys (only for the cached set)
};
const PackedKeys& packed_keys(const std::string& isa, std::size_t n) {
    static std::map<std::pair<std::string, std::size_t>, std::unique_ptr<PackedKeys>> all;
    auto& slot = all[{isa, n}];
    if (!slot) {
        const auto& k = *kernels(isa, 4, 4).key;
        slot = std::make_unique<PackedKeys>();
        slot->codes.resize(n * k.code_bytes);
        slot->scales.resize(n);
        std::vector<float> x(std::size_t(kDim) * (n <= kCachedKeys ? n : 1));
        fill(x, 4);
        for (std::size_t t = 0; t < n; ++t)
            k.encode(vectors().signs.data(), &x[(n <= kCachedKeys ? t : 0) * kDim], TQ_SCALE_LEAST_SQUARES,
                     &slot->codes[t * k.code_bytes], &slot->scales[t]);
        if (n <= kCachedKeys) slot->plain = std::move(x);
    }
    return *slot;
}

// A K4/V2 cache of one layer, 16 KV heads and `seq` positions, with the FP32 copy.
struct DecodeSetup {
    fa_tq_state* state = nullptr;
    fa_tq_cache* cache = nullptr;
    std::vector<float> keys, values, q, k, v, out, scores;
    ~DecodeSetup() {
        fa_tq_cache_free(cache);
        fa_tq_free(state);
    }
};
const std::vector<float>& fp32_history(int seq, int which) {
    static std::map<std::pair<int, int>, std::vector<float>> all;
    auto& v = all[{seq, which}];
    if (v.empty()) {
        v.resize(std::size_t(seq) * kHeads * kDim);
        fill(v, 10 + which);
    }
    return v;
}
DecodeSetup& decode_setup(const std::string& isa, int seq) {
    static std::map<std::pair<std::string, int>, std::unique_ptr<DecodeSetup>> all;
    auto& slot = all[{isa, seq}];
    if (!slot) {
        slot = std::make_unique<DecodeSetup>();
        DecodeSetup& s = *slot;
        tq_set_isa(isa.c_str());
        s.state = fa_tq_init(kDim, fa_tq_config_default(), 1);
        tq_set_isa(nullptr);
        s.cache = fa_tq_cache_new(s.state, 1, kHeads, seq);
        const auto& keys = fp32_history(seq, 0);
        const auto& values = fp32_history(seq, 1);
        for (int t = 0; t < seq; ++t) {
            fa_tq_quantize(s.state, s.cache, 0, t, &keys[std::size_t(t) * kHeads * kDim], true);
            fa_tq_quantize(s.state, s.cache, 0, t, &values[std::size_t(t) * kHeads * kDim], false);
        }
        s.q.resize(kHeads * kDim);
        s.k.resize(kHeads * kDim);
        s.v.resize(kHeads * kDim);
        s.out.resize(kHeads * kDim);
        s.scores.resize(seq);
        fill(s.q, 20);
        fill(s.k, 21);
        fill(s.v, 22);
    }
    return *slot;
}

// Every compiled head dim with 4-bit keys: what a head dim that is not a power of
// two costs (docs/rotations.md) next to the powers of two around it.
std::vector<int> k4_head_dims() {
    std::vector<int> dims;
    for (const auto& v : tq::variants())
        if (v.rate_eighths == 32) dims.push_back(v.head_dim);
    return dims;
}

// The per-head-dim score rows' key rates, and a row's name: "score_k5_cached",
// "score_int8_k5_cached".
constexpr int kScoreBits[] = {4, 5, 8};
std::string score_row(int bits, bool integer) {
    return std::string(integer ? "score_int8_k" : "score_k") + std::to_string(bits) + "_cached";
}

// The value sum's rows: V4 over kCachedKeys values for a GQA group of kSumQueries
// query heads, in float and in integers ("sum_v4_cached", "sum_int8_v4_cached").
constexpr std::size_t kSumQueries = 4;
std::string sum_row(bool integer) { return integer ? "sum_int8_v4_cached" : "sum_v4_cached"; }

void register_head_dims(const std::string& isa) {
    using benchmark::State;
    for (int d : k4_head_dims()) {
        const std::string p = isa + "/d" + std::to_string(d) + "/";
        auto k4 = [isa, d]() -> const tq_kernels& {
            const tq_kernels* k = nullptr;
            if (tq_find_isa(isa.c_str(), d, 4, 4, &k) != TQ_OK) throw std::runtime_error(tq_last_error());
            return *k;
        };
        benchmark::RegisterBenchmark((p + "rotate").c_str(), [k4, d](State& st) {
            const auto& k = k4();
            std::vector<float> signs = tq::rotation_signs(d, 1), x(d), out(d);
            fill(x, 2);
            for (auto _ : st) {
                k.rotate(signs.data(), x.data(), out.data());
                benchmark::DoNotOptimize(out.data());
            }
        });
        benchmark::RegisterBenchmark((p + "encode_k4").c_str(), [k4, d](State& st) {
            const auto& k = *k4().key;
            std::vector<float> signs = tq::rotation_signs(d, 1), x(d);
            fill(x, 2);
            std::vector<std::uint8_t> code(k.code_bytes);
            float scale = 0;
            for (auto _ : st) {
                k.encode(signs.data(), x.data(), TQ_SCALE_LEAST_SQUARES, code.data(), &scale);
                benchmark::DoNotOptimize(code.data());
            }
        });
        // K4, K5 and K8 (where the build has them): K5's integer kernels gather the int8
        // centroids at head dims without windows; K8's integer score (the "int8" rows, as
        // FA_TQ_SCORE_INT8 names it) looks up int16 centroids.
        for (int bits : kScoreBits) {
            const tq_kernels* kb = nullptr;
            if (tq_find_isa(isa.c_str(), d, float(bits), 4, &kb) != TQ_OK) continue;
            for (bool integer : {false, true}) {
                const std::string name = p + score_row(bits, integer);
                benchmark::RegisterBenchmark(name.c_str(), [kb, d, integer](State& st) {
                    const auto& k = *kb->key;
                    const tq_score_fn score = integer ? k.score_int : k.score;
                    std::vector<float> signs = tq::rotation_signs(d, 1), x(std::size_t(d) * kCachedKeys), q(d);
                    fill(x, 4);
                    fill(q, 3);
                    std::vector<std::uint8_t> codes(kCachedKeys * k.code_bytes);
                    std::vector<float> scales(kCachedKeys), out(kCachedKeys);
                    for (std::size_t t = 0; t < kCachedKeys; ++t)
                        k.encode(signs.data(), &x[t * d], TQ_SCALE_LEAST_SQUARES, &codes[t * k.code_bytes], &scales[t]);
                    for (auto _ : st) {
                        score(q.data(), 1, codes.data(), scales.data(), kCachedKeys, out.data(), kCachedKeys);
                        benchmark::DoNotOptimize(out.data());
                    }
                });
            }
        }
        for (bool integer : {false, true}) {
            benchmark::RegisterBenchmark((p + sum_row(integer)).c_str(), [k4, d, integer](State& st) {
                const auto& v = *k4().value;
                const tq_accumulate_fn sum = integer ? v.accumulate_int : v.accumulate;
                std::vector<float> signs = tq::rotation_signs(d, 1), x(std::size_t(d) * kCachedKeys);
                std::vector<float> w(kSumQueries * kCachedKeys), acc(kSumQueries * d), scales(kCachedKeys);
                fill(x, 5);
                fill(w, 6);
                for (float& a : w) a = a * a;  // softmax weights are not negative
                std::vector<std::uint8_t> codes(kCachedKeys * v.code_bytes);
                for (std::size_t t = 0; t < kCachedKeys; ++t)
                    v.encode(signs.data(), &x[t * d], TQ_SCALE_LEAST_SQUARES, &codes[t * v.code_bytes], &scales[t]);
                for (auto _ : st) {
                    sum(w.data(), kCachedKeys, kSumQueries, codes.data(), scales.data(), kCachedKeys, acc.data(),
                        std::size_t(d));
                    benchmark::DoNotOptimize(acc.data());
                }
            });
        }
    }
}

void register_isa(const std::string& isa) {
    using benchmark::State;
    const tq::baselines::Baselines& base = tq::baselines::for_isa(isa);
    const std::string p = isa + "/";

    // 1. rotate, one vector in L1
    benchmark::RegisterBenchmark((p + "rotate/naive").c_str(), [&base](State& st) {
        std::vector<float> out(kDim);
        for (auto _ : st) {
            base.naive_rotate(vectors().signs.data(), vectors().x.data(), out.data(), kDim);
            benchmark::DoNotOptimize(out.data());
        }
    });
    benchmark::RegisterBenchmark((p + "rotate/tq").c_str(), [isa](State& st) {
        const auto& k = kernels(isa, 4, 4);
        std::vector<float> out(kDim);
        for (auto _ : st) {
            k.rotate(vectors().signs.data(), vectors().x.data(), out.data());
            benchmark::DoNotOptimize(out.data());
        }
    });
    // 2. encode K4 (rotate + norm + bucketize + pack)
    benchmark::RegisterBenchmark((p + "encode_k4/tq").c_str(), [isa](State& st) {
        const auto& k = *kernels(isa, 4, 4).key;
        std::vector<std::uint8_t> code(k.code_bytes);
        float scale = 0;
        for (auto _ : st) {
            k.encode(vectors().signs.data(), vectors().x.data(), TQ_SCALE_LEAST_SQUARES, code.data(), &scale);
            benchmark::DoNotOptimize(code.data());
        }
    });
    // 3. score K4 (float "tq" and integer "int8" paths): 8M keys from DRAM against a
    // streaming read of the same bytes; 4096 cached keys against FP32 dots
    for (std::size_t n : {kDramKeys, kCachedKeys})
        for (bool integer : {false, true}) {
            const std::string tag = std::string(n == kDramKeys ? "score_k4_dram/" : "score_k4_cached/") +
                                    (integer ? "int8" : "tq");
            benchmark::RegisterBenchmark((p + tag).c_str(), [isa, n, integer](State& st) {
                const auto& k = *kernels(isa, 4, 4).key;
                const tq_score_fn score = integer ? k.score_int : k.score;
                const PackedKeys& keys = packed_keys(isa, n);
                std::vector<float> out(n);
                for (auto _ : st) {
                    score(vectors().q.data(), 1, keys.codes.data(), keys.scales.data(), n, out.data(), n);
                    benchmark::DoNotOptimize(out.data());
                }
                st.SetBytesProcessed(std::int64_t(st.iterations()) * std::int64_t(keys.codes.size() + 4 * n));
            });
        }
    benchmark::RegisterBenchmark((p + "score_k4_dram/stream").c_str(), [isa, &base](State& st) {
        const PackedKeys& keys = packed_keys(isa, kDramKeys);
        static std::vector<float> same_bytes;  // as many bytes as codes + scales
        if (same_bytes.empty()) {
            same_bytes.resize((keys.codes.size() + 4 * kDramKeys) / 4);
            fill(same_bytes, 5);
        }
        for (auto _ : st) benchmark::DoNotOptimize(base.stream_sum(same_bytes.data(), same_bytes.size()));
        st.SetBytesProcessed(std::int64_t(st.iterations()) * std::int64_t(same_bytes.size() * 4));
    });
    benchmark::RegisterBenchmark((p + "score_k4_cached/fp32").c_str(), [isa, &base](State& st) {
        const PackedKeys& keys = packed_keys(isa, kCachedKeys);
        std::vector<float> out(kCachedKeys);
        for (auto _ : st) {
            base.fp32_dots(vectors().q.data(), keys.plain.data(), kCachedKeys, kDim, out.data());
            benchmark::DoNotOptimize(out.data());
        }
    });
    // 4. decode attention K4/V2, 16 KV heads: one token's quantize + attention vs FP32 append + attention
    for (int seq : kSeqs) {
        const std::string tag = "attention_" + std::to_string(seq) + "/";
        benchmark::RegisterBenchmark((p + tag + "tq").c_str(), [isa, seq](State& st) {
            DecodeSetup& s = decode_setup(isa, seq);
            for (auto _ : st)
                fa_tq_attention(s.state, s.cache, 0, seq - 1, s.q.data(), kHeads, s.k.data(), s.v.data(), 0,
                                s.out.data());
        })->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark((p + tag + "fp32").c_str(), [isa, seq, &base](State& st) {
            DecodeSetup& s = decode_setup(isa, seq);
            auto& keys = const_cast<std::vector<float>&>(fp32_history(seq, 0));
            auto& values = const_cast<std::vector<float>&>(fp32_history(seq, 1));
            const std::size_t last = std::size_t(seq - 1) * kHeads * kDim;
            for (auto _ : st) {
                std::copy(s.k.begin(), s.k.end(), keys.begin() + last);
                std::copy(s.v.begin(), s.v.end(), values.begin() + last);
                base.fp32_attention(s.q.data(), kHeads, keys.data(), values.data(), seq, kHeads, kDim,
                                    1 / std::sqrt(float(kDim)), s.scores.data(), s.out.data());
            }
        })->Unit(benchmark::kMicrosecond);
    }
}

void summary(const std::map<std::string, double>& ns, const std::vector<std::string>& isas) {
    auto get = [&](const std::string& name) {
        const auto it = ns.find(name);
        return it == ns.end() ? NAN : it->second;
    };
    std::printf("\nSummary (d=128, single thread; %s; %s)\n", cpu_model().c_str(), "g++ " __VERSION__);
    std::printf("%-7s %-44s %12s %12s %9s %9s %s\n", "ISA", "figure", "ours", "baseline", "ratio", "target", "met");
    for (const auto& isa : isas) {
        const std::string p = isa + "/";
        auto row = [&](const char* figure, double ours, double baseline, double ratio, const char* unit, double target,
                       bool at_least) {
            const bool met = at_least ? ratio >= target : ratio <= target;
            std::printf("%-7s %-44s %10.2f%-2s %10.2f%-2s %8.2fx %s%7.2fx %s\n", isa.c_str(), figure, ours, unit,
                        baseline, unit, ratio, at_least ? ">=" : "<=", target,
                        std::isnan(ratio) ? "-" : (met ? "yes" : "NO"));
        };
        const double rot = get(p + "rotate/tq"), naive = get(p + "rotate/naive");
        row("1 rotate vs spec's naive fwht (ns)", rot, naive, naive / rot, "ns", 10, true);
        const double enc = get(p + "encode_k4/tq");
        row("2 encode K4 / rotate (ns)", enc, rot, enc / rot, "ns", 3, false);
        const double bytes = double(kDramKeys) * (kDim * 4 / 8 + 4);
        const double dram = get(p + "score_k4_dram/tq"), stream = get(p + "score_k4_dram/stream");
        const double dram_target = isa == "avx512" ? 0.8 : 0.7;  // of the stream: AVX-512 0.8, the others 0.7
        row("3a score K4 8M keys, bandwidth vs stream (GB/s)", bytes / dram, bytes / stream, stream / dram, "",
            dram_target, true);
        const double dram_int = get(p + "score_k4_dram/int8");
        row("3a score K4 int8 8M keys, vs stream (GB/s)", bytes / dram_int, bytes / stream, stream / dram_int, "",
            dram_target, true);
        const double cached = get(p + "score_k4_cached/tq"), dots = get(p + "score_k4_cached/fp32");
        row("3b score K4 4096 keys vs FP32 dots (us)", cached / 1e3, dots / 1e3, dots / cached, "us", 3, true);
        const double cached_int = get(p + "score_k4_cached/int8");
        row("3b score K4 int8 4096 keys vs FP32 dots (us)", cached_int / 1e3, dots / 1e3, dots / cached_int, "us", 3,
            true);
        for (int seq : kSeqs) {
            const std::string tag = p + "attention_" + std::to_string(seq) + "/";
            const std::string figure = "4 decode attention K4/V2 16 heads, " + std::to_string(seq) + " (us)";
            const double t = get(tag + "tq"), f = get(tag + "fp32");
            row(figure.c_str(), t / 1e3, f / 1e3, f / t, "us", seq == 32768 ? 5 : 1, true);
        }
    }
    std::printf("\nPer head dim (ns; per coordinate in brackets; scores per key of 4096 cached, K5 and K8 where built;\n"
                "value sums per value of 4096 cached, for a group of 4 query heads)\n"
                "%-7s %8s %20s %20s %20s %20s %20s %20s %20s %20s %20s %20s\n", "ISA", "head_dim", "rotate",
                "encode K4", "score K4", "int8 score K4", "score K5", "int8 score K5", "score K8", "int16 score K8",
                "sum V4 x4", "int8 sum V4 x4");
    for (const auto& isa : isas)
        for (int d : k4_head_dims()) {
            const std::string p = isa + "/d" + std::to_string(d) + "/";
            const double rot = get(p + "rotate"), enc = get(p + "encode_k4");
            if (std::isnan(rot)) continue;
            std::printf("%-7s %8d %10.1f [%6.3f] %10.1f [%6.3f]", isa.c_str(), d, rot, rot / d, enc, enc / d);
            for (int bits : kScoreBits)
                for (bool integer : {false, true}) {
                    const double per_key = get(p + score_row(bits, integer)) / kCachedKeys;
                    std::printf(" %10.2f [%6.3f]", per_key, per_key / d);
                }
            for (bool integer : {false, true}) {
                const double per_value = get(p + sum_row(integer)) / kCachedKeys;
                std::printf(" %10.2f [%6.3f]", per_value, per_value / d);
            }
            std::printf("\n");
        }
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    const std::vector<std::string> isas = tq::available_isas();
    for (const auto& isa : isas) register_isa(isa);
    for (const auto& isa : isas) register_head_dims(isa);
    tq::bench::Collector collector;
    benchmark::RunSpecifiedBenchmarks(&collector);
    summary(collector.ns, isas);
    benchmark::Shutdown();
    return 0;
}

// `tq bench`: ns per call of every compiled variant on every ISA this CPU runs,
// side by side, with the baselines of tq-bench (baselines/baselines.hpp).
#include "args.hpp"
#include "commands.hpp"
#include "kernel_names.hpp"

#include "baselines.hpp"
#include "turboquant/registry.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace tq::cli {
namespace {

constexpr const char* kUsage =
    "usage: tq bench [KERNEL | --all] [--isa ISA] [--seconds S] [--json]\n"
    "  Times the kernels of every compiled (head dim, bits) on every ISA this CPU runs (or --isa):\n"
    "  rotate, encode and decode per vector, score per key and accumulate per value over 4096\n"
    "  cache-resident vectors (with GB/s of packed bytes read), next to the baselines of tq-bench:\n"
    "  the spec's naive rotation (powers of two) and FP32 dot products over the same keys\n"
    "  uncompressed. KERNEL (a name from tq list) times that variant's kernels only. Best of 3 runs of about\n"
    "  S seconds each (default 0.02); the machine's noise applies, compare ratios.\n";
constexpr std::size_t kKeys = 4096;

// Best of three runs of ~seconds each: ns per call of f, which does `per_call`
// units.  The clock is read once per batch of calls, batches doubling, so that
// reading it does not count.
double time_ns(const std::function<void()>& f, double seconds, double per_call = 1) {
    using Clock = std::chrono::steady_clock;
    double best = 1e300;
    for (int run = 0; run < 3; ++run) {
        long calls = 0;
        const auto t0 = Clock::now();
        double elapsed = 0;
        for (long batch = 1; elapsed < seconds; batch *= 2) {
            for (long i = 0; i < batch; ++i) f();
            calls += batch;
            elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
        }
        best = std::min(best, elapsed * 1e9 / double(calls) / per_call);
    }
    return best;
}

void fill(std::vector<float>& v, unsigned seed) {
    std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (auto& x : v) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x = float(s >> 40) / float(1 << 23) - 1.0f;
    }
}

struct Row {
    std::string isa;
    int head_dim, rate_eighths;
    double rotate, encode, decode, score, accumulate;  // ns per vector / key / value
    double score_gbs, accumulate_gbs, naive_rotate, fp32_dot;
};

Row measure(const std::string& isa, const tq_bit_kernels& v, const tq_kernels& k, double seconds) {
    const int d = v.head_dim;
    const auto& base = tq::baselines::for_isa(isa);
    const std::vector<float> signs = rotation_signs(d, 1);
    std::vector<float> x(std::size_t(d) * kKeys), q(d), out(std::max<std::size_t>(kKeys, d)), acc(d), w(kKeys);
    fill(x, 2), fill(q, 3), fill(w, 4);
    std::vector<std::uint8_t> codes(kKeys * v.code_bytes);
    std::vector<float> scales(kKeys);
    for (std::size_t t = 0; t < kKeys; ++t)
        v.encode(signs.data(), &x[t * d], TQ_SCALE_LEAST_SQUARES, &codes[t * v.code_bytes], &scales[t]);
    Row r{isa, d, v.rate_eighths, 0, 0, 0, 0, 0, 0, 0, NAN, 0};
    float scale = 0;
    r.rotate = time_ns([&] { k.rotate(signs.data(), x.data(), out.data()); }, seconds);
    r.encode = time_ns([&] { v.encode(signs.data(), x.data(), TQ_SCALE_LEAST_SQUARES, codes.data(), &scale); }, seconds);
    r.decode = time_ns([&] { v.decode(signs.data(), codes.data(), scales[0], out.data()); }, seconds);
    r.score = time_ns([&] { v.score(q.data(), 1, codes.data(), scales.data(), kKeys, out.data(), kKeys); }, seconds, kKeys);
    r.accumulate = time_ns([&] { v.accumulate(w.data(), kKeys, 1, codes.data(), scales.data(), kKeys, acc.data(), acc.size()); }, seconds, kKeys);
    const double bytes = double(v.code_bytes + 4);  // a packed vector and its scale
    r.score_gbs = bytes / r.score;
    r.accumulate_gbs = bytes / r.accumulate;
    if ((d & (d - 1)) == 0)  // the spec's fwht is for powers of two
        r.naive_rotate = time_ns([&] { base.naive_rotate(signs.data(), x.data(), out.data(), d); }, seconds);
    r.fp32_dot = time_ns([&] { base.fp32_dots(q.data(), x.data(), kKeys, d, out.data()); }, seconds, kKeys);
    return r;
}

}  // namespace

int bench(int argc, char** argv) {
    const Args args("bench", kUsage, argc, argv, {"--isa", "--seconds"}, {"--all", "--json"}, 1);
    const double seconds = args.number("--seconds", 0.02);
    if (!(seconds > 0 && seconds <= 10)) args.fail("--seconds must be in (0, 10]");
    const KernelRef* only = nullptr;
    if (!args.positionals().empty()) {
        if (args.flag("--all")) args.fail("give a KERNEL or --all, not both");
        only = find_kernel(args.positionals()[0]);
        if (!only) args.fail("'" + args.positionals()[0] + "' is not compiled into this build (names: tq list)");
        if (!only->rate_eighths)
            args.fail("'" + args.positionals()[0] + "' is not a per-bits kernel (e.g. tq_score_d128_b4__" +
                      tq_active_isa() + ")");
    }
    std::vector<std::string> isas;
    for (const auto& isa : available_isas())
        if ((!args.has("--isa") || isa == args.value("--isa")) && (!only || isa == only->isa)) isas.push_back(isa);
    if (isas.empty()) {
        std::fprintf(stderr, "tq bench: ISA %s is not in this build or does not run here\n",
                     only ? only->isa : args.value("--isa").c_str());
        return 1;
    }

    std::vector<Row> rows;
    for (const auto& isa : isas)
        for (const auto& v : variants()) {
            if (only && (v.head_dim != only->head_dim || v.rate_eighths != only->rate_eighths)) continue;
            const tq_kernels* k = nullptr;
            const float rate = float(v.rate_eighths) / 8;
            if (tq_find_isa(isa.c_str(), v.head_dim, rate, rate, &k) != TQ_OK) continue;
            rows.push_back(measure(isa, *k->key, *k, seconds));
        }
    if (rows.empty()) {
        std::fprintf(stderr, "tq bench: %s is not compiled into this build (see tq list)\n",
                     only ? args.positionals()[0].c_str() : "nothing");
        return 1;
    }
    if (args.flag("--json")) {
        std::printf("[");
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const Row& r = rows[i];
            std::printf("%s\n  {\"isa\": %s, \"head_dim\": %d, \"bits\": %g, \"rotate_ns\": %.2f, \"encode_ns\": %.2f, "
                        "\"decode_ns\": %.2f, \"score_ns_per_key\": %.3f, \"score_gb_s\": %.2f, "
                        "\"accumulate_ns_per_value\": %.3f, \"accumulate_gb_s\": %.2f, \"naive_rotate_ns\": %s, "
                        "\"fp32_dot_ns_per_key\": %.3f}",
                        i ? "," : "", json_string(r.isa).c_str(), r.head_dim, r.rate_eighths / 8.0, r.rotate, r.encode,
                        r.decode, r.score, r.score_gbs, r.accumulate, r.accumulate_gbs,
                        std::isnan(r.naive_rotate) ? "null" : std::to_string(r.naive_rotate).c_str(), r.fp32_dot);
        }
        std::printf("\n]\n");
        return 0;
    }
    std::printf("ns per call (score and accumulate: per key/value over %zu cached vectors; GB/s of packed bytes read)\n",
                kKeys);
    std::printf("%-7s %8s %5s %9s %9s %9s %10s %7s %10s %7s | %9s %9s\n", "isa", "head_dim", "bits", "rotate", "encode",
                "decode", "score/key", "GB/s", "accum/val", "GB/s", "naive rot", "fp32 dot");
    for (const Row& r : rows) {
        char naive[16] = "-";
        if (!std::isnan(r.naive_rotate)) std::snprintf(naive, sizeof naive, "%.1f", r.naive_rotate);
        std::printf("%-7s %8d %5g %9.1f %9.1f %9.1f %10.2f %7.1f %10.2f %7.1f | %9s %9.2f\n", r.isa.c_str(),
                    r.head_dim, r.rate_eighths / 8.0, r.rotate, r.encode, r.decode, r.score, r.score_gbs, r.accumulate,
                    r.accumulate_gbs, naive, r.fp32_dot);
    }
    return 0;
}

}  // namespace tq::cli

// `tq demo`: what compression buys and costs, for every compiled variant.
#include "commands.hpp"

#include "turboquant/registry.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace tq::cli {
namespace {

constexpr const char* kUsage =
    "usage: tq demo [--vectors N] [--seed S]\n"
    "  Encodes N random Gaussian vectors (default 4096) with every compiled (head_dim, bits)\n"
    "  and prints bytes per vector, ratio vs FP32, round-trip MSE vs theory, and ns per call.\n";

struct Options {
    int vectors = 4096;
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
        if (arg == "--vectors" && v <= 1000000) o.vectors = static_cast<int>(v);
        else if (arg == "--seed") o.seed = static_cast<std::uint64_t>(v);
        else return false;
    }
    return true;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int demo(int argc, char** argv) {
    Options opt;
    if (!parse(argc, argv, opt)) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    std::printf("TurboQuant demo: %d random Gaussian vectors per variant, one packed vector = codes + 4-byte scale\n\n",
                opt.vectors);
    std::printf("%8s %5s %12s %10s %14s %14s %8s %12s %12s\n", "head_dim", "bits", "bytes/vec", "vs FP32",
                "MSE measured", "MSE theory", "ratio", "encode ns", "score ns/key");
    std::mt19937_64 rng(opt.seed);
    std::normal_distribution<float> normal;
    for (const tq_bit_kernels& v : variants()) {
        const int d = v.head_dim;
        const tq_kernels& k = find(d, v.bits, v.bits);
        const std::vector<float> signs = rotation_signs(d, opt.seed);
        const std::size_t n = static_cast<std::size_t>(opt.vectors);
        std::vector<float> x(n * d), out(d), q(d), scores(n), scale(n);
        std::vector<std::uint8_t> codes(n * v.code_bytes);
        for (auto& e : x) e = normal(rng);
        for (auto& e : q) e = normal(rng);

        auto encode_all = [&] {
            for (std::size_t t = 0; t < n; ++t)
                if (v.encode(signs.data(), &x[t * d], TQ_SCALE_NORM, &codes[t * v.code_bytes], &scale[t]) != TQ_OK) return false;
            return true;
        };
        if (!encode_all()) return 1;  // also warms the caches for the timed pass
        auto t0 = std::chrono::steady_clock::now();
        encode_all();
        const double encode_ns = seconds_since(t0) * 1e9 / double(n);

        double rel_mse = 0;
        for (std::size_t t = 0; t < n; ++t) {
            v.decode(signs.data(), &codes[t * v.code_bytes], scale[t], out.data());
            double err = 0, norm = 0;
            for (int i = 0; i < d; ++i) {
                err += (x[t * d + i] - out[i]) * double(x[t * d + i] - out[i]);
                norm += x[t * d + i] * double(x[t * d + i]);
            }
            rel_mse += err / norm;
        }
        rel_mse /= double(n);

        k.rotate(signs.data(), q.data(), q.data());
        t0 = std::chrono::steady_clock::now();
        constexpr int kRepeats = 8;
        for (int r = 0; r < kRepeats; ++r) v.score(q.data(), codes.data(), scale.data(), n, scores.data());
        const double score_ns = seconds_since(t0) * 1e9 / (double(n) * kRepeats);

        const double bytes = double(v.code_bytes) + sizeof(float);
        std::printf("%8d %5d %12.0f %9.2fx %14.5g %14.5g %8.3f %12.1f %12.2f\n", d, v.bits, bytes,
                    4.0 * d / bytes, rel_mse, v.mse_unit_vector, rel_mse / v.mse_unit_vector, encode_ns, score_ns);
    }
    std::printf("\nMSE measured: mean of |x - decode(encode(x))|^2 / |x|^2; theory: the codebook's E|u - u_hat|^2 "
                "for a random unit vector u (tq-codebook).\n");
    return 0;
}

}  // namespace tq::cli

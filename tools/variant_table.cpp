// The per-variant codec table of `tq demo`: what each compiled (head_dim, bits)
// buys and costs on random Gaussian vectors.
#include "commands.hpp"

#include "turboquant/registry.hpp"

#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

namespace tq::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void print_variant_table(int vectors, std::uint64_t seed) {
    std::printf("Every compiled variant: %d random Gaussian vectors each; a packed vector = codes + 4-byte scale\n\n",
                vectors);
    std::printf("%8s %5s %10s %9s %13s %13s %7s %11s %13s\n", "head_dim", "bits", "bytes/vec", "vs FP32",
                "MSE measured", "MSE theory", "ratio", "encode ns", "score ns/key");
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal;
    for (const tq_bit_kernels& v : variants()) {
        const int d = v.head_dim;
        const tq_kernels& k = find(d, rate(v), rate(v));
        const std::vector<float> signs = rotation_signs(d, seed);
        const std::size_t n = static_cast<std::size_t>(vectors);
        std::vector<float> x(n * d), out(d), q(d), scores(n), scale(n);
        std::vector<std::uint8_t> codes(n * v.code_bytes);
        for (auto& e : x) e = normal(rng);
        for (auto& e : q) e = normal(rng);

        auto encode_all = [&] {
            for (std::size_t t = 0; t < n; ++t)
                v.encode(signs.data(), &x[t * d], TQ_SCALE_NORM, &codes[t * v.code_bytes], &scale[t]);
        };
        encode_all();  // also warms the caches for the timed pass
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
        for (int r = 0; r < kRepeats; ++r) v.score(q.data(), 1, codes.data(), scale.data(), n, scores.data(), n);
        const double score_ns = seconds_since(t0) * 1e9 / (double(n) * kRepeats);

        const double bytes = double(v.code_bytes) + sizeof(float);
        std::printf("%8d %5g %10.0f %8.2fx %13.5g %13.5g %7.3f %11.1f %13.2f\n", d, double(rate(v)), bytes, 4.0 * d / bytes,
                    rel_mse, v.mse_unit_vector, rel_mse / v.mse_unit_vector, encode_ns, score_ns);
    }
    std::printf("\nMSE measured: mean |x - decode(encode(x))|^2 / |x|^2 (norm scale); theory: the codebook's "
                "E|u - u_hat|^2 for a random unit vector (tq-codebook).\n");
}

}  // namespace tq::cli

// Fused kernels equal their unfused definitions: score == decode-then-dot,
// accumulate == decode-then-sum, for key counts at and around tile edges.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>

namespace {

struct Encoded {
    std::vector<std::uint8_t> codes;
    std::vector<float> scales;
    std::vector<float> decoded;  // n x d, original domain
};

Encoded encode_all(const tq_bit_kernels& v, const std::vector<float>& signs, std::size_t n, std::uint64_t seed) {
    const int d = v.head_dim;
    const auto x = tq::test::gaussian(n * d, seed);
    Encoded e{std::vector<std::uint8_t>(n * v.code_bytes), std::vector<float>(n), std::vector<float>(n * d)};
    for (std::size_t t = 0; t < n; ++t) {
        REQUIRE(v.encode(signs.data(), &x[t * d], TQ_SCALE_NORM, &e.codes[t * v.code_bytes], &e.scales[t]) == TQ_OK);
        v.decode(signs.data(), &e.codes[t * v.code_bytes], e.scales[t], &e.decoded[t * d]);
    }
    return e;
}

constexpr std::size_t kCounts[] = {0, 1, 2, 3, 5, 8, 17, 64};

}  // namespace

TEST_CASE("fused: score equals decode-then-dot within 1e-5 relative") {
    tq::test::for_each_variant([](const tq_bit_kernels& v, const tq_kernels& k, const std::vector<float>& signs) {
        const int d = v.head_dim;
        for (std::size_t n : kCounts) {
            CAPTURE(n);
            const Encoded e = encode_all(v, signs, n, 7 + n);
            const auto q = tq::test::gaussian(d, 99);
            std::vector<float> q_rot(d), scores(n + 1, -12345.0f);
            k.rotate(signs.data(), q.data(), q_rot.data());
            v.score(q_rot.data(), 1, e.codes.data(), e.scales.data(), n, scores.data(), n);
            for (std::size_t t = 0; t < n; ++t) {
                const std::span<const float> kt(&e.decoded[t * d], d);
                // relative to |q| |k_hat|, the scale of a dot product's rounding error
                const double scale = std::sqrt(tq::test::dot(q, q) * tq::test::dot(kt, kt));
                CHECK(std::abs(scores[t] - tq::test::dot(q, kt)) <= 1e-5 * scale);
            }
            CHECK(scores[n] == -12345.0f);  // nothing written past n
        }
    });
}

TEST_CASE("fused: a group of queries scores each key once, each query's scores bit for bit as alone") {
    tq::test::for_each_variant([](const tq_bit_kernels& v, const tq_kernels& k, const std::vector<float>& signs) {
        const int d = v.head_dim;
        for (std::size_t n : {std::size_t(0), std::size_t(3), std::size_t(37)})
            for (std::size_t group : {std::size_t(2), std::size_t(3), std::size_t(4), std::size_t(5), std::size_t(9),
                                      std::size_t(12)}) {  // blocks of 8 and 4 queries, and the rest
                CAPTURE(n);
                CAPTURE(group);
                const Encoded e = encode_all(v, signs, n, 3 + n);
                const std::size_t stride = n + 2;  // rows apart by more than n: the gaps stay untouched
                std::vector<float> q_rot(group * d), scores(group * stride, -12345.0f), alone(n);
                for (std::size_t j = 0; j < group; ++j) {
                    const auto q = tq::test::gaussian(d, 40 + j);
                    k.rotate(signs.data(), q.data(), &q_rot[j * d]);
                }
                v.score(q_rot.data(), group, e.codes.data(), e.scales.data(), n, scores.data(), stride);
                for (std::size_t j = 0; j < group; ++j) {
                    v.score(&q_rot[j * d], 1, e.codes.data(), e.scales.data(), n, alone.data(), n);
                    for (std::size_t t = 0; t < n; ++t) CHECK(scores[j * stride + t] == alone[t]);
                    CHECK(scores[j * stride + n] == -12345.0f);
                    CHECK(scores[j * stride + n + 1] == -12345.0f);
                }
            }
    });
}

TEST_CASE("fused: accumulate equals decode-then-weighted-sum within 1e-5 relative") {
    tq::test::for_each_variant([](const tq_bit_kernels& v, const tq_kernels& k, const std::vector<float>& signs) {
        const int d = v.head_dim;
        for (std::size_t n : kCounts) {
            CAPTURE(n);
            const Encoded e = encode_all(v, signs, n, 17 + n);
            const auto w = tq::test::gaussian(n, 5);
            const auto start = tq::test::gaussian(d, 6);  // accumulate adds to what is there
            std::vector<float> acc(d), out(d);
            k.rotate(signs.data(), start.data(), acc.data());
            v.accumulate(w.data(), n, 1, e.codes.data(), e.scales.data(), n, acc.data(), std::size_t(d));
            k.unrotate(signs.data(), acc.data(), out.data());
            std::vector<double> want(start.begin(), start.end());
            double bound = std::sqrt(tq::test::dot(start, start));
            for (std::size_t t = 0; t < n; ++t) {
                const std::span<const float> vt(&e.decoded[t * d], d);
                for (int i = 0; i < d; ++i) want[i] += double(w[t]) * vt[i];
                bound += std::abs(w[t]) * std::sqrt(tq::test::dot(vt, vt));
            }
            double err = 0;
            for (int i = 0; i < d; ++i) err += (out[i] - want[i]) * (out[i] - want[i]);
            CHECK(std::sqrt(err) <= 1e-5 * bound);
        }
    });
}

TEST_CASE("fused: a group of weight rows accumulates each value once, each row's sum bit for bit as alone") {
    tq::test::for_each_variant([](const tq_bit_kernels& v, const tq_kernels&, const std::vector<float>& signs) {
        const std::size_t d = std::size_t(v.head_dim);
        for (std::size_t n : {std::size_t(0), std::size_t(3), std::size_t(37)})
            for (std::size_t group : {std::size_t(2), std::size_t(3), std::size_t(4), std::size_t(5), std::size_t(9),
                                      std::size_t(12)}) {  // blocks of 8 and 4 rows, and the rest
                CAPTURE(n);
                CAPTURE(group);
                const Encoded e = encode_all(v, signs, n, 11 + n);
                const std::size_t w_stride = n + 3, a_stride = d + 5;  // rows apart by more than a row
                const auto w = tq::test::gaussian(group * w_stride, 8);
                const auto start = tq::test::gaussian(group * a_stride, 9);
                std::vector<float> acc(start.begin(), start.end());
                v.accumulate(w.data(), w_stride, group, e.codes.data(), e.scales.data(), n, acc.data(), a_stride);
                for (std::size_t j = 0; j < group; ++j) {
                    std::vector<float> alone(&start[j * a_stride], &start[j * a_stride] + d);
                    v.accumulate(&w[j * w_stride], n, 1, e.codes.data(), e.scales.data(), n, alone.data(), d);
                    for (std::size_t i = 0; i < d; ++i) CHECK(acc[j * a_stride + i] == alone[i]);
                    for (std::size_t i = d; i < a_stride && j * a_stride + i < acc.size(); ++i)
                        CHECK(acc[j * a_stride + i] == start[j * a_stride + i]);  // the gaps untouched
                }
            }
    });
}

TEST_CASE("fused: a key's score does not depend on how many keys are scored with it") {
    // score reduces keys in batches of a register's lanes; a key alone and in a
    // batch must sum in the same order.
    for (const tq_bit_kernels& v : tq::variants()) {
        CAPTURE(v.head_dim);
        CAPTURE(v.rate_eighths);
        const int d = v.head_dim;
        const auto signs = tq::rotation_signs(d, tq::test::kSeed);
        constexpr std::size_t kKeys = 37;
        const auto x = tq::test::gaussian(kKeys * d, 8);
        std::vector<std::uint8_t> codes(kKeys * v.code_bytes);
        std::vector<float> scales(kKeys), batch(kKeys), alone(1);
        for (std::size_t t = 0; t < kKeys; ++t)
            REQUIRE(v.encode(signs.data(), &x[t * d], TQ_SCALE_NORM, &codes[t * v.code_bytes], &scales[t]) == TQ_OK);
        const auto q = tq::test::gaussian(d, 9);
        v.score(q.data(), 1, codes.data(), scales.data(), kKeys, batch.data(), kKeys);
        for (std::size_t t = 0; t < kKeys; ++t) {
            v.score(q.data(), 1, &codes[t * v.code_bytes], &scales[t], 1, alone.data(), 1);
            REQUIRE(alone[0] == batch[t]);
        }
    }
}

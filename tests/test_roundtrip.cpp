// encode -> decode against the codebook's theoretical distortion.
#include "test_support.hpp"

#include <doctest/doctest.h>

TEST_CASE("round trip: mean relative MSE within 5% of theory, and the least-squares scale is never worse") {
    // A Gaussian x, normalized, is uniform on the sphere, so E|x - x_hat|^2/|x|^2
    // is exactly the codebook's unit-vector MSE.  With 2000 vectors the sampling
    // error of the mean is < 1% (per-vector spread ~ sqrt(2/d) of the mean).
    constexpr int kVectors = 2000;
    for (const tq_bit_kernels& v : tq::variants()) {
        const int d = v.head_dim;
        CAPTURE(d);
        CAPTURE(v.rate_eighths);
        const auto signs = tq::rotation_signs(d, tq::test::kSeed);
        const auto x = tq::test::gaussian(std::size_t(kVectors) * d, 100 + v.rate_eighths);
        std::vector<std::uint8_t> code(v.code_bytes);
        std::vector<float> out(d);
        double sum = 0, sum_ls = 0;
        for (int t = 0; t < kVectors; ++t) {
            const std::span<const float> xt(&x[std::size_t(t) * d], d);
            float scale = 0;
            REQUIRE(v.encode(signs.data(), xt.data(), TQ_SCALE_NORM, code.data(), &scale) == TQ_OK);
            CHECK(scale == doctest::Approx(std::sqrt(tq::test::dot(xt, xt))).epsilon(1e-6));
            v.decode(signs.data(), code.data(), scale, out.data());
            const double err_norm = tq::test::squared_distance(xt, out) / tq::test::dot(xt, xt);
            sum += err_norm;

            // Least squares: the same levels, and the scale that minimizes the error for them.
            const auto norm_code = code;
            REQUIRE(v.encode(signs.data(), xt.data(), TQ_SCALE_LEAST_SQUARES, code.data(), &scale) == TQ_OK);
            CHECK(code == norm_code);
            v.decode(signs.data(), code.data(), scale, out.data());
            const double err_ls = tq::test::squared_distance(xt, out) / tq::test::dot(xt, xt);
            CHECK(err_ls <= err_norm * (1 + 1e-5) + tq::test::decode_rounding(err_norm));
            sum_ls += err_ls;
        }
        const double measured = sum / kVectors;
        CHECK(measured / v.mse_unit_vector == doctest::Approx(1.0).epsilon(0.05));
        CHECK(sum_ls < sum);
    }
}

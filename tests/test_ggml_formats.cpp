// tq-llama's llama.cpp KV-cache formats (examples/llama/ggml_formats.*, hadamard.*):
// byte-exact to ggml's reference quantizers on tests/fixtures/ggml-blocks-*.npy (ggml's own
// output, made by make_ggml_blocks.py from the pinned llama.cpp sources), decoding within
// each format's error bound, FP16 rounding, and the rotation's orthonormality.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ggml_formats.hpp"
#include "hadamard.hpp"

namespace {

using llama::ggml::Format;
namespace ggml = llama::ggml;

// A 2-D .npy of little-endian float32 ('<f4') or bytes ('|u1'), as np.save writes them.
struct Npy {
    std::size_t rows = 0, cols = 0;
    std::vector<std::uint8_t> data;
    const float* floats() const { return reinterpret_cast<const float*>(data.data()); }
};

Npy read_npy(const std::string& name, const std::string& descr, std::size_t item) {
    std::string path = std::string(TQ_FIXTURES) + "/" + name;
    std::ifstream in(path, std::ios::binary);
    std::vector<std::uint8_t> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (raw.size() < 10 || std::string(raw.begin() + 1, raw.begin() + 6) != "NUMPY") throw std::runtime_error(path + ": not a .npy file");
    std::size_t header_len = raw[8] | raw[9] << 8;
    std::string header(raw.begin() + 10, raw.begin() + 10 + static_cast<long>(header_len));
    if (header.find("'descr': '" + descr + "'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos)
        throw std::runtime_error(path + ": expected " + descr + " in C order: " + header);
    Npy a;
    std::size_t at = header.find("'shape': (") + 10;
    a.rows = std::stoul(header.substr(at));
    a.cols = std::stoul(header.substr(header.find(',', at) + 1));
    a.data.assign(raw.begin() + 10 + static_cast<long>(header_len), raw.end());
    if (a.data.size() != a.rows * a.cols * item) throw std::runtime_error(path + ": truncated");
    return a;
}

const Npy& input() {
    static const Npy x = read_npy("ggml-blocks-input.npy", "<f4", 4);
    return x;
}

float fp16_at(const std::uint8_t* p) { return ggml::fp16_to_fp32(static_cast<std::uint16_t>(p[0] | p[1] << 8)); }

}  // namespace

TEST_CASE("ggml formats: blocks byte for byte as ggml's reference quantizers") {
    const Npy& x = input();
    REQUIRE(x.cols == ggml::kBlock);
    for (Format f : ggml::kFormats) {
        std::string type(ggml::name(f));
        CAPTURE(type);
        Npy want = read_npy("ggml-blocks-" + type + ".npy", "|u1", 1);
        REQUIRE(want.rows == x.rows);
        REQUIRE(want.cols == ggml::block_bytes(f));
        std::vector<std::uint8_t> got(want.data.size());
        ggml::quantize_row(f, x.floats(), static_cast<int>(x.rows * x.cols), got.data());
        for (std::size_t b = 0; b < x.rows; ++b) {
            CAPTURE(b);
            CHECK(std::equal(got.begin() + static_cast<long>(b * want.cols), got.begin() + static_cast<long>((b + 1) * want.cols),
                             want.data.begin() + static_cast<long>(b * want.cols)));
        }
    }
}

// Every decoded value within the format's step, from the stored FP16 scale d (and min m):
// round to nearest is within d/2, plus what rounding the scale to FP16 moves the largest
// code, e = d·2^-11 + 2^-25 (relative for a normal half, absolute for a subnormal one).
// q4_0/q5_0 clip the top code (x/d up to +8 or +16 lands on 7 or 15): within d there.
// iq4_nl's levels are 8 to 24 apart on a scale of 127 and the scale is refitted by least
// squares: within 12/127 of the block's largest magnitude, plus the refit's change,
// bounded here by 3/127.
TEST_CASE("ggml formats: decoding within each format's error bound") {
    const Npy& x = input();
    constexpr float kFp16 = 0x1p-11f, kSubnormal = 0x1p-25f;
    for (Format f : ggml::kFormats) {
        std::string type(ggml::name(f));
        std::size_t bytes = ggml::block_bytes(f);
        for (std::size_t b = 0; b < x.rows; ++b) {
            const float* xb = x.floats() + b * ggml::kBlock;
            float amax = 0, min = xb[0], max = xb[0];
            for (int j = 0; j < ggml::kBlock; ++j) {
                amax = std::fmax(amax, std::fabs(xb[j]));
                min = std::fmin(min, xb[j]);
                max = std::fmax(max, xb[j]);
            }
            if (max - min >= 65504) continue;  // past FP16's range the stored scale or min is infinite
            std::vector<std::uint8_t> block(bytes);
            float y[ggml::kBlock];
            ggml::quantize_row(f, xb, ggml::kBlock, block.data());
            ggml::dequantize_row(f, block.data(), ggml::kBlock, y);
            float d = std::fabs(fp16_at(block.data())), e = d * kFp16 + kSubnormal;
            for (int j = 0; j < ggml::kBlock; ++j) {
                float err = std::fabs(xb[j] - y[j]), bound = 0;
                float top_code = f == Format::q4_0 ? 7.0f : 15.0f;  // q4_0 and q5_0: the clipped top, code - offset
                bool top = y[j] != 0 && y[j] == top_code * fp16_at(block.data());
                switch (f) {
                case Format::q8_0: bound = 0.5f * (d + e) + 127 * e; break;
                case Format::q4_0: bound = (top ? 1.0f : 0.5f) * (d + e) + 8 * e; break;
                case Format::q5_0: bound = (top ? 1.0f : 0.5f) * (d + e) + 16 * e; break;
                case Format::q5_1: bound = 0.5f * (d + e) + 31 * e + std::fabs(min) * kFp16 + kSubnormal; break;
                case Format::iq4_nl: bound = amax * 15 / 127 + 127 * e; break;
                }
                CAPTURE(type);
                CAPTURE(b);
                CAPTURE(j);
                CHECK(err <= bound * (1 + 1e-5f) + 1e-30f);
            }
        }
    }
}

TEST_CASE("ggml formats: FP16 conversion rounds to nearest even") {
    auto h = [](float v) { return ggml::fp32_to_fp16(v); };
    CHECK(h(1.0f) == 0x3c00);
    CHECK(h(-2.0f) == 0xc000);
    CHECK(h(-0.0f) == 0x8000);
    CHECK(h(65504.0f) == 0x7bff);
    CHECK(h(65519.996f) == 0x7bff);
    CHECK(h(65520.0f) == 0x7c00);  // the tie above the largest half goes to infinity (even)
    CHECK(h(INFINITY) == 0x7c00);
    CHECK((h(NAN) & 0x7c00) == 0x7c00);
    CHECK((h(NAN) & 0x3ff) != 0);
    CHECK(h(1 + 0x1p-11f) == 0x3c00);      // tie: to the even mantissa 0
    CHECK(h(1 + 3 * 0x1p-11f) == 0x3c02);  // tie: to the even mantissa 2
    CHECK(h(0x1p-14f) == 0x0400);          // smallest normal
    CHECK(h(0x1p-24f) == 0x0001);          // smallest subnormal
    CHECK(h(0x1p-25f) == 0x0000);          // tie: to even 0
    CHECK(h(3 * 0x1p-25f) == 0x0002);      // tie: to even 2
    CHECK(h(0x1.8p-25f) == 0x0001);
    CHECK(h(0x1p-14f - 0x1p-25f) == 0x0400);  // rounds up across into the normals
    for (std::uint32_t i = 0; i < 0x10000; ++i) {  // every half converts to a float and back exactly
        auto half = static_cast<std::uint16_t>(i);
        float v = ggml::fp16_to_fp32(half);
        if (std::isnan(v)) continue;
        CAPTURE(i);
        REQUIRE(ggml::fp32_to_fp16(v) == half);
        if ((i & 0x7c00) != 0x7c00 && (i & 0x3ff) != 0x3ff) {  // halfway to the next half: to the even one
            float next = ggml::fp16_to_fp32(static_cast<std::uint16_t>(i + 1));
            float mid = v + (next - v) / 2;
            REQUIRE(ggml::fp32_to_fp16(mid) == ((i & 1) ? i + 1 : i));
        }
    }
}

TEST_CASE("ggml formats: names, block sizes and bad lengths") {
    CHECK(ggml::block_bytes(Format::q4_0) == 18);
    CHECK(ggml::block_bytes(Format::q5_0) == 22);
    CHECK(ggml::block_bytes(Format::q5_1) == 24);
    CHECK(ggml::block_bytes(Format::q8_0) == 34);
    CHECK(ggml::block_bytes(Format::iq4_nl) == 18);
    for (Format f : ggml::kFormats) CHECK(ggml::parse_format(ggml::name(f)) == f);
    CHECK_FALSE(ggml::parse_format("q3_0"));
    CHECK_FALSE(ggml::parse_format("Q4_0"));
    float x[48] = {};
    std::uint8_t out[64];
    CHECK_THROWS_AS(ggml::quantize_row(Format::q4_0, x, 48, out), std::invalid_argument);
}

TEST_CASE("Hadamard rotation: orthonormal, symmetric, its own inverse") {
    for (int n : {64, 128, 256}) {
        CAPTURE(n);
        llama::BlockHadamard h(n);
        double worst = 0;
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) {
                double dot = 0;
                for (int k = 0; k < n; ++k) dot += static_cast<double>(h.at(i, k)) * h.at(j, k);
                worst = std::fmax(worst, std::fabs(dot - (i == j)));
                REQUIRE(h.at(i, j) == h.at(j, i));
            }
        CHECK(worst < 1e-6);  // H·H^T = I to float rounding
    }
    llama::BlockHadamard h(64);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::vector<float> x(128), y(128), z(128);  // two blocks of 64: block-diagonal
    for (float& v : x) v = normal(rng);
    h.apply(x.data(), 128, y.data());
    h.apply(y.data(), 128, z.data());
    for (int b = 0; b < 2; ++b) {
        double nx = 0, ny = 0;
        for (int i = 64 * b; i < 64 * (b + 1); ++i) nx += x[i] * x[i], ny += y[i] * y[i];
        CHECK(std::fabs(ny / nx - 1) < 1e-5);  // norm kept, block by block
    }
    for (int i = 0; i < 128; ++i) CHECK(z[i] == doctest::Approx(x[i]).epsilon(1e-5));
    CHECK_THROWS_AS(llama::BlockHadamard(48), std::invalid_argument);
}

TEST_CASE("Hadamard rotation: llama.cpp's block sizes") {
    CHECK(llama::key_rotation_size(64) == 64);
    CHECK(llama::key_rotation_size(128) == 128);
    CHECK(llama::key_rotation_size(192) == 64);
    CHECK(llama::key_rotation_size(256) == 256);
    CHECK(llama::key_rotation_size(80) == 0);
    CHECK(llama::value_rotation_size(128) == 64);
    CHECK(llama::value_rotation_size(96) == 0);
}

// One byte format for every ISA: each ISA encodes the same vectors to the same
// bytes and scales, and decodes every other ISA's bytes alike.  These tests loop over
// every ISA the CPU runs themselves, so they are their own executable, run once
// (tests/CMakeLists.txt), not once per ISA like tq_tests.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#if defined(__aarch64__) && defined(__ARM_NEON)
#include "isa/neon_bytes.hpp"
#endif
#if defined(__x86_64__)
#include "isa/avx2_vnni.hpp"
#include "isa/avx512_vnni.hpp"
#endif

// TQ_BYTE_DOT=plain, read here apart from the kernels' own reading (isa/int8.hpp).
[[maybe_unused]] static bool plain_byte_dot_set() {
    const char* v = std::getenv("TQ_BYTE_DOT");
    return v && std::string(v) == "plain";
}

TEST_CASE("cross-ISA: identical bytes and scales, and each decodes the others'") {
    const auto isas = tq::available_isas();
    MESSAGE("ISAs on this CPU: " << [&] {
        std::string s;
        for (const auto& i : isas) s += i + " ";
        return s;
    }());
    const auto& reference_variants = tq::variants();
    for (const tq_bit_kernels& v : reference_variants) {
        const int d = v.head_dim;
        CAPTURE(d);
        CAPTURE(v.rate_eighths);
        const auto signs = tq::rotation_signs(d, tq::test::kSeed);
        constexpr int kVectors = 200;
        const auto x = tq::test::gaussian(std::size_t(kVectors) * d, 77 + v.rate_eighths);
        std::vector<const tq_bit_kernels*> kernels;
        for (const auto& isa : isas) {
            const tq_kernels* k = nullptr;
            REQUIRE(tq_find_isa(isa.c_str(), d, tq::rate(v), tq::rate(v), &k) == TQ_OK);
            kernels.push_back(k->key);
        }
        for (int kind : {TQ_SCALE_NORM, TQ_SCALE_LEAST_SQUARES}) {
            CAPTURE(kind);
            std::vector<std::vector<std::uint8_t>> codes(isas.size(), std::vector<std::uint8_t>(v.code_bytes));
            std::vector<float> scales(isas.size());
            for (int t = 0; t < kVectors; ++t) {
                for (std::size_t i = 0; i < isas.size(); ++i)
                    REQUIRE(kernels[i]->encode(signs.data(), &x[std::size_t(t) * d], kind, codes[i].data(),
                                               &scales[i]) == TQ_OK);
                for (std::size_t i = 1; i < isas.size(); ++i) {
                    CAPTURE(isas[i]);
                    REQUIRE(codes[i] == codes[0]);
                    REQUIRE(scales[i] == scales[0]);
                }
                // every ISA decodes every ISA's bytes to the same vector, up to float rounding
                std::vector<float> base(d), out(d);
                kernels[0]->decode(signs.data(), codes[0].data(), scales[0], base.data());
                for (std::size_t i = 0; i < isas.size(); ++i)
                    for (std::size_t j = 0; j < isas.size(); ++j) {
                        kernels[i]->decode(signs.data(), codes[j].data(), scales[j], out.data());
                        REQUIRE(std::sqrt(tq::test::squared_distance(out, base) / tq::test::dot(base, base)) < 1e-6);
                    }
            }
        }
    }
}

// Vectors whose rotated, normalized coordinates are exactly 0 (with either sign) or
// underflow to 0: each ISA finds the sign its own way (a compare where -0 counts as
// 0, or the sign bit of u + 0), and the level of -0 is the upper half's, as for +0.
static std::vector<std::vector<float>> signed_zero_vectors(int d) {
    std::vector<std::vector<float>> vs;
    for (float z : {0.0f, -0.0f}) vs.push_back(std::vector<float>(std::size_t(d), z));
    std::vector<float> v(static_cast<std::size_t>(d));
    for (int i = 0; i < d; ++i) v[std::size_t(i)] = i % 3 == 0 ? -0.0f : 0.0f;
    vs.push_back(v);
    // Two equal large coordinates cancel in half of the outputs, which the tiny ones
    // then hold: |u| about 2^-160 there, below the smallest subnormal.
    for (float big : {0x1p60f, -0x1p60f}) {
        std::fill(v.begin(), v.end(), -0.0f);
        v[0] = v[1] = big;
        v[2] = 0x1p-100f, v[3] = -0x1p-100f, v[5] = -0x1.8p-101f, v[std::size_t(d) - 1] = 0x1p-99f;
        vs.push_back(v);
    }
    // Sparse mixes of +-0, +-1 and +-2^-100.
    std::uint64_t state = 12345;
    for (int k = 0; k < 16; ++k) {
        for (auto& x : v) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            const unsigned pick = unsigned(state >> 59);
            x = pick < 12 ? (pick & 1 ? -0.0f : 0.0f) : pick < 14 ? (pick & 1 ? -1.0f : 1.0f) : (pick & 1 ? -0x1p-100f : 0x1p-100f);
        }
        vs.push_back(v);
    }
    return vs;
}

TEST_CASE("cross-ISA: identical bytes for coordinates that are or underflow to +0 and -0") {
    const auto isas = tq::available_isas();
    int vectors = 0;
    for (const tq_bit_kernels& v : tq::variants()) {
        const int d = v.head_dim;
        CAPTURE(d);
        CAPTURE(v.rate_eighths);
        const auto signs = tq::rotation_signs(d, tq::test::kSeed);
        std::vector<const tq_bit_kernels*> kernels;
        const tq_kernels* first_isa = nullptr;
        for (const auto& isa : isas) {
            const tq_kernels* k = nullptr;
            REQUIRE(tq_find_isa(isa.c_str(), d, tq::rate(v), tq::rate(v), &k) == TQ_OK);
            kernels.push_back(k->key);
            if (!first_isa) first_isa = k;
        }
        int negative_zeros = 0;  // coordinates of u = R x / |x| that are -0: what the vectors are for
        for (const auto& x : signed_zero_vectors(d)) {
            std::vector<float> r(static_cast<std::size_t>(d));
            first_isa->rotate(signs.data(), x.data(), r.data());
            const double norm = std::sqrt(tq::test::dot(x, x));
            for (const float ri : r) {
                const float u = norm > 0 ? ri * static_cast<float>(1 / norm) : ri * 0.0f;
                negative_zeros += u == 0 && std::signbit(u);
            }
            for (int kind : {TQ_SCALE_NORM, TQ_SCALE_LEAST_SQUARES}) {
                CAPTURE(kind);
                std::vector<std::uint8_t> first(v.code_bytes), code(v.code_bytes);
                float first_scale = 0, scale = 0;
                REQUIRE(kernels[0]->encode(signs.data(), x.data(), kind, first.data(), &first_scale) == TQ_OK);
                for (std::size_t i = 1; i < isas.size(); ++i) {
                    CAPTURE(isas[i]);
                    REQUIRE(kernels[i]->encode(signs.data(), x.data(), kind, code.data(), &scale) == TQ_OK);
                    CHECK(code == first);
                    CHECK(std::memcmp(&scale, &first_scale, sizeof scale) == 0);
                }
                ++vectors;
            }
        }
        CHECK(negative_zeros > 0);
    }
    MESSAGE(vectors << " encodes compared across " << isas.size() << " ISAs");
}

TEST_CASE("cross-ISA: rotate and unrotate give identical floats on every ISA") {
    // The rotations run the same butterflies in the same order (also where a
    // SIMD ISA works in chunks of registers), so they agree bit for bit.
    const auto isas = tq::available_isas();
    std::set<int> dims;
    for (const auto& v : tq::variants()) dims.insert(v.head_dim);
    for (int d : dims) {
        CAPTURE(d);
        const float bits = tq::rate(tq::variants().front());
        const auto signs = tq::rotation_signs(d, tq::test::kSeed);
        const auto x = tq::test::gaussian(d, 5);
        std::vector<float> first_rot(d), first_inv(d), rot(d), inv(d);
        for (std::size_t i = 0; i < isas.size(); ++i) {
            CAPTURE(isas[i]);
            const tq_kernels* k = nullptr;
            REQUIRE(tq_find_isa(isas[i].c_str(), d, bits, bits, &k) == TQ_OK);
            k->rotate(signs.data(), x.data(), rot.data());
            k->unrotate(signs.data(), x.data(), inv.data());
            if (i == 0) {
                first_rot = rot;
                first_inv = inv;
            }
            CHECK(rot == first_rot);
            CHECK(inv == first_inv);
        }
    }
}

TEST_CASE("cross-ISA: score_int gives identical floats on every ISA") {
    // The integer path's sums are exact and its float steps are the same two
    // products everywhere (isa/int8.hpp), so every ISA agrees with the scalar reference.
    const auto isas = tq::available_isas();
    for (const tq_bit_kernels& v : tq::variants()) {
        if (!v.score_int) continue;
        const int d = v.head_dim;
        CAPTURE(d);
        CAPTURE(v.rate_eighths);
        const auto signs = tq::rotation_signs(d, tq::test::kSeed);
        constexpr std::size_t kKeys = 45, kQueries = 5;
        const auto x = tq::test::gaussian(kKeys * d, 8);
        std::vector<std::uint8_t> codes(kKeys * v.code_bytes);
        std::vector<float> scales(kKeys);
        for (std::size_t t = 0; t < kKeys; ++t)
            REQUIRE(v.encode(signs.data(), &x[t * d], TQ_SCALE_NORM, &codes[t * v.code_bytes], &scales[t]) == TQ_OK);
        const auto q = tq::test::gaussian(kQueries * d, 9);
        std::vector<float> first(kQueries * kKeys), out(kQueries * kKeys);
        for (std::size_t i = 0; i < isas.size(); ++i) {
            CAPTURE(isas[i]);
            const tq_kernels* k = nullptr;
            REQUIRE(tq_find_isa(isas[i].c_str(), d, tq::rate(v), tq::rate(v), &k) == TQ_OK);
            const bool has_int = k->key->score_int != nullptr;
            REQUIRE(has_int);
            k->key->score_int(q.data(), kQueries, codes.data(), scales.data(), kKeys, out.data(), kKeys);
            if (i == 0) first = out;
            CHECK(out == first);
        }
    }
}

TEST_CASE("cross-ISA: accumulate_int gives identical floats on every ISA") {
    // The integer value sum's sums are exact and its float steps are the same on every
    // ISA (the weights' rounding, two products, one fused add: isa/int8.hpp), so every
    // ISA agrees with the scalar reference.
    const auto isas = tq::available_isas();
    for (const tq_bit_kernels& v : tq::variants()) {
        if (!v.accumulate_int) continue;
        const int d = v.head_dim;
        CAPTURE(d);
        CAPTURE(v.rate_eighths);
        const auto signs = tq::rotation_signs(d, tq::test::kSeed);
        constexpr std::size_t kValues = 150, kQueries = 5;  // two whole chunks of 64 and a partial one
        const auto x = tq::test::gaussian(kValues * d, 10);
        std::vector<std::uint8_t> codes(kValues * v.code_bytes);
        std::vector<float> scales(kValues);
        for (std::size_t t = 0; t < kValues; ++t)
            REQUIRE(v.encode(signs.data(), &x[t * d], TQ_SCALE_NORM, &codes[t * v.code_bytes], &scales[t]) == TQ_OK);
        auto w = tq::test::gaussian(kQueries * kValues, 11);
        for (float& a : w) a = a * a;  // weights are not negative
        const auto start = tq::test::gaussian(kQueries * d, 12);
        std::vector<float> first, out;
        for (std::size_t i = 0; i < isas.size(); ++i) {
            CAPTURE(isas[i]);
            const tq_kernels* k = nullptr;
            REQUIRE(tq_find_isa(isas[i].c_str(), d, tq::rate(v), tq::rate(v), &k) == TQ_OK);
            const bool has_int = k->value->accumulate_int != nullptr;
            REQUIRE(has_int);
            out = start;
            k->value->accumulate_int(w.data(), kValues, kQueries, codes.data(), scales.data(), kValues, out.data(), d);
            if (i == 0) first = out;
            CHECK(out == first);
        }
    }
}

#if defined(__aarch64__) && defined(__ARM_NEON)
TEST_CASE("cross-ISA: NEON's integer score runs sdot exactly where the CPU has it, unless TQ_BYTE_DOT is plain") {
    // The test presets run this suite under qemu with and without the dot-product
    // extension (QEMU_CPU) and say which in TQ_EXPECT_SDOT; elsewhere the kernel's
    // hardware capability bit is the expectation (Linux, where the kernels read it).
    const char* want = std::getenv("TQ_EXPECT_SDOT");
#if defined(__linux__) && defined(HWCAP_ASIMDDP)
    const bool cpu_has = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
    const bool cpu_has = tq::neon::has_sdot();
#endif
    const bool expected = want ? std::string(want) == "1" : cpu_has;
    MESSAGE("sdot: CPU " << cpu_has << ", kernels " << tq::neon::has_sdot() << ", plain " << plain_byte_dot_set());
    CHECK(cpu_has == expected);
    CHECK(tq::neon::has_sdot() == (TQ_NEON_SDOT_CODE && expected && !plain_byte_dot_set()));
}
#endif

#if defined(__x86_64__)
TEST_CASE("cross-ISA: AVX-512's integer score runs VNNI exactly where the CPU has it, unless TQ_BYTE_DOT is plain") {
    // The avx512-emulated build's CPU has VNNI (SIMDe's); elsewhere the CPU's feature bit.
#if TQ_EMULATED_AVX512
    const bool cpu_has = true;
#else
    __builtin_cpu_init();
    const bool cpu_has = __builtin_cpu_supports("avx512vnni");
#endif
    MESSAGE("vnni: CPU " << cpu_has << ", kernels " << tq::avx512::has_vnni() << ", plain " << plain_byte_dot_set());
    CHECK(tq::avx512::has_vnni() == (TQ_AVX512_VNNI_CODE && cpu_has && !plain_byte_dot_set()));
}

TEST_CASE("cross-ISA: AVX2's integer score runs AVX-VNNI exactly where the CPU has it, unless TQ_BYTE_DOT is plain") {
    __builtin_cpu_init();
    const bool cpu_has = __builtin_cpu_supports("avxvnni");
    MESSAGE("avx-vnni: CPU " << cpu_has << ", kernels " << tq::avx2::has_vnni() << ", plain " << plain_byte_dot_set());
    CHECK(tq::avx2::has_vnni() == (TQ_AVX2_VNNI_CODE && cpu_has && !plain_byte_dot_set()));
}
#endif

// The quality levers (docs/levers.md): half-float scales, centering, key
// smoothing, exact sinks and per-layer configs.  Each must keep attention exact in math (fused ==
// attention over the decoded cache), survive ring, evict and clear, and write
// the same bytes on every ISA.
#include "cache_support.hpp"
#include "fa_tq_internal.hpp"
#include "half_float.hpp"

#include <doctest/doctest.h>

#include <cfloat>
#include <cstring>

using tq::KVCache;
using tq::Kind;

namespace {

const tq::Config kAllLevers{0, 0, FA_TQ_SCALE_DEFAULT, FA_TQ_SCALE_FORMAT_F16, FA_TQ_CENTER_BOTH, 8, 2, FA_TQ_SMOOTH_KEYS};

tq::Config with_bits(tq::Config c, float kb, float vb) {
    c.key_bits = kb;
    c.value_bits = vb;
    return c;
}

// Keys and values as a real model's: a large common mean plus a smaller part
// that varies, [pos][head][d].
std::vector<float> offset_vectors(std::size_t n, int heads, int d, float mean_size, std::uint64_t seed) {
    auto x = tq::test::gaussian(n * heads * d, seed);
    const auto mean = tq::test::gaussian(std::size_t(heads) * d, seed + 1000);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += mean_size * mean[i % mean.size()];
    return x;
}

// Worst relative difference between fa_tq_attention at the last of n positions
// and FP32 attention over the decoded cache (the same cache, so only the
// fusion is tested: kernels, per-block means, sinks, scale widening).
double fused_vs_decoded(const tq::Quantizer& quant, int q_heads, int kv_heads, int n, KVCache::Mode mode, int max_seq,
                        float mean_size) {
    const int d = quant.head_dim();
    KVCache cache(quant, 1, kv_heads, max_seq, mode);
    const std::size_t token = std::size_t(kv_heads) * d;
    const auto keys = offset_vectors(n, kv_heads, d, mean_size, 1), values = offset_vectors(n, kv_heads, d, mean_size, 2);
    std::vector<float> out(std::size_t(q_heads) * d);
    const auto q = tq::test::gaussian(out.size(), 3);
    for (int t = 0; t < n; ++t)
        cache.attention(0, t, q, {&keys[t * token], token}, {&values[t * token], token}, out);
    const int window = std::min(n, max_seq), first = n - window;
    std::vector<float> dk(window * token), dv(window * token), want(out.size()), scratch(window);
    cache.dequantize(0, first, window, Kind::key, dk);
    cache.dequantize(0, first, window, Kind::value, dv);
    tq::reference::fp32_attention(q.data(), q_heads, dk.data(), dv.data(), window, kv_heads, d,
                                  1 / std::sqrt(float(d)), scratch.data(), want.data());
    double worst = 0;
    for (int h = 0; h < q_heads; ++h) {
        const std::span<const float> o(&out[h * d], d), w(&want[h * d], d);
        worst = std::max(worst, std::sqrt(tq::test::squared_distance(o, w) / tq::test::dot(w, w)));
    }
    return worst;
}

}  // namespace

TEST_CASE("levers: half floats round trip every half and round floats to nearest, ties to even") {
    using tq::detail::float_to_half;
    using tq::detail::half_to_float;
    for (std::uint32_t h = 0; h < 0x7c00; ++h)  // every finite half, both signs
        for (std::uint32_t sign : {0u, 0x8000u}) {
            const auto bits = std::uint16_t(h | sign);
            REQUIRE(float_to_half(half_to_float(bits)) == bits);
        }
    for (std::uint32_t h = 0; h + 1 < 0x7c00; ++h) {  // between neighbours: nearest, and ties to the even one
        const float lo = half_to_float(std::uint16_t(h)), hi = half_to_float(std::uint16_t(h + 1));
        const float mid = lo + (hi - lo) / 2;  // exact in float
        CHECK(float_to_half(mid) == ((h & 1) ? h + 1 : h));
        CHECK(float_to_half(std::nextafter(mid, 0.0f)) == h);
        CHECK(float_to_half(std::nextafter(mid, 1e9f)) == h + 1);
    }
    CHECK(half_to_float(0x3c00) == 1.0f);
    CHECK(half_to_float(0x0001) == 0x1p-24f);  // the smallest subnormal
    CHECK(half_to_float(0x7bff) == tq::detail::kHalfMax);
}

TEST_CASE("levers: scales are stored as half floats, and the decoded vector uses exactly them") {
    const int d = tq::test::main_head_dim();
    const auto& v = tq::variants().front();
    const tq::Quantizer quant(d, {tq::rate(v), tq::rate(v), FA_TQ_SCALE_DEFAULT, FA_TQ_SCALE_FORMAT_F16, FA_TQ_CENTER_NONE,
                                  0, FA_TQ_NO_SINKS});
    KVCache cache(quant, 1, 1, 4);
    const auto x = tq::test::gaussian(std::size_t(d), 5);
    cache.quantize(0, 0, x, Kind::key);
    std::vector<float> got(d), want(d);
    cache.dequantize(0, 0, 1, Kind::key, got);
    const tq_bit_kernels& k = *quant.get()->kernels->key;
    std::vector<std::uint8_t> code(k.code_bytes);
    float scale = 0;
    const auto signs = tq::rotation_signs(d, 0);
    REQUIRE(k.encode(signs.data(), x.data(), quant.get()->scale_kind, code.data(), &scale) == TQ_OK);
    k.decode(signs.data(), code.data(), tq::detail::half_to_float(tq::detail::float_to_half(scale)),
                                      want.data());
    CHECK(got == want);
    // a scale beyond the half range is refused with a message, and changes nothing
    auto big = x;
    for (float& e : big) e *= 1e6f;
    CHECK_THROWS_WITH_AS(cache.quantize(0, 1, big, Kind::key), doctest::Contains("FA_TQ_SCALE_FORMAT_F32"), tq::Error);
    CHECK(cache.seq_len() == 0);
    const tq::Quantizer wide(d, {tq::rate(v), tq::rate(v), FA_TQ_SCALE_DEFAULT, FA_TQ_SCALE_FORMAT_F32});
    KVCache float_cache(wide, 1, 1, 4);
    float_cache.quantize(0, 0, big, Kind::key);
}

TEST_CASE("levers: fused attention equals attention over the decoded cache with centering and sinks") {
    const int d = tq::test::main_head_dim();
    const auto& v = tq::variants().front();
    for (tq::Config levers : {kAllLevers, tq::Config{0, 0, FA_TQ_SCALE_DEFAULT, FA_TQ_SCALE_FORMAT_F32, FA_TQ_CENTER_KEYS},
                              tq::Config{0, 0, FA_TQ_SCALE_DEFAULT, FA_TQ_SCALE_FORMAT_F16, FA_TQ_CENTER_VALUES, 1, 1}}) {
        const tq::Quantizer quant(d, with_bits(levers, tq::rate(v), tq::rate(v)), 7);
        for (auto [q_heads, kv_heads] : {std::pair{4, 4}, std::pair{4, 1}})
            for (int n : {1, 3, 70, 300}) {
                CAPTURE(levers.center);
                CAPTURE(q_heads);
                CAPTURE(n);
                // Float rounding of the scores' mean offsets and the exp: a few float epsilons per position.
                CHECK(fused_vs_decoded(quant, q_heads, kv_heads, n, KVCache::Mode::linear, 300, 20.0f) < 1e-4);
                CHECK(fused_vs_decoded(quant, q_heads, kv_heads, n, KVCache::Mode::ring, 64, 20.0f) < 1e-4);
            }
    }
}

TEST_CASE("levers: centering stores the running mean of earlier positions and cuts the error of offset vectors") {
    const int d = tq::test::main_head_dim(), heads = 2, n = 200;
    const auto& v = tq::variants().front();
    fa_tq_state* centered =
        fa_tq_init(d, tq::test::config(tq::rate(v), tq::rate(v), FA_TQ_SCALE_FORMAT_F16, FA_TQ_CENTER_BOTH, 16, FA_TQ_NO_SINKS), 0);
    fa_tq_state* plain = fa_tq_init(d, tq::test::config(tq::rate(v), tq::rate(v), FA_TQ_SCALE_FORMAT_F16, FA_TQ_CENTER_NONE), 0);
    REQUIRE(centered);
    REQUIRE(plain);
    fa_tq_cache* a = fa_tq_cache_new(centered, 1, heads, n);
    fa_tq_cache* b = fa_tq_cache_new(plain, 1, heads, n);
    const std::size_t token = std::size_t(heads) * d;
    const float mean_size = 3.0f;  // the common part holds 90% of the energy
    const auto x = offset_vectors(n, heads, d, mean_size, 11);
    for (int t = 0; t < n; ++t) {
        REQUIRE(fa_tq_quantize(centered, a, 0, t, &x[t * token], true) == FA_TQ_OK);
        REQUIRE(fa_tq_quantize(plain, b, 0, t, &x[t * token], true) == FA_TQ_OK);
    }
    // Blocks of 16: [0,1) [1,2) [2,4) [4,8) [8,16) [16,32) ... ; block 8 = [64,80) opened at 64
    // with the mean m of positions 0..63 shrunk by its James-Stein factor
    // 1 - (tr C / 64) / |m|^2 per head (no entry of these is an outlier), rounded to halves.
    const fa_tq_stream& s = a->layers[0].keys;
    REQUIRE(s.first_block == 0);
    REQUIRE(s.means.size() == std::size_t(5 + 184 / 16 + 1) * token);
    std::vector<double> mean(token, 0.0), variance(token, 0.0);
    for (int t = 0; t < 64; ++t)
        for (std::size_t i = 0; i < token; ++i) mean[i] += x[t * token + i] / 64.0;
    for (int t = 0; t < 64; ++t)
        for (std::size_t i = 0; i < token; ++i) variance[i] += (x[t * token + i] - mean[i]) * (x[t * token + i] - mean[i]) / 63.0;
    for (int h = 0; h < heads; ++h) {
        double trace = 0, mean_sq = 0;
        for (int i = h * d; i < (h + 1) * d; ++i) {
            trace += variance[i];
            mean_sq += mean[i] * mean[i];
        }
        const double shrink = 1 - trace / 64 / mean_sq;
        CHECK(shrink > 0.95);  // a mean this strong is kept almost whole
        for (int i = h * d; i < (h + 1) * d; i += 7)
            CHECK(std::abs(tq::detail::half_to_float(s.means[8 * token + i]) - shrink * mean[i]) <=
                  1e-6 + std::abs(shrink * mean[i]) * 0x1p-11);  // half rounding
    }
    for (std::size_t i = 0; i < token; ++i) CHECK(s.means[i] == 0);  // block 0 has nothing before it
    CHECK(s.count == n);
    std::vector<float> da(n * token), db(n * token);
    REQUIRE(fa_tq_dequantize(centered, a, 0, 0, n, true, da.data()));
    REQUIRE(fa_tq_dequantize(plain, b, 0, 0, n, true, db.data()));
    // Once the running mean is near the common part, the error is that of quantizing
    // the varying part alone: ~1/(1 + mean_size^2) = 10% of the plain one.
    double err_a = 0, err_b = 0;
    for (std::size_t i = 16 * token; i < n * token; ++i) {
        err_a += (da[i] - x[i]) * double(da[i] - x[i]);
        err_b += (db[i] - x[i]) * double(db[i] - x[i]);
    }
    CHECK(err_a < 0.2 * err_b);
    fa_tq_cache_free(a);
    fa_tq_cache_free(b);
    fa_tq_free(centered);
    fa_tq_free(plain);
}

TEST_CASE("levers: smoothing moves key error to the channels queries weigh least") {
    // Keys strong where queries are weak: the score error of isotropic noise is
    // |q|^2 |k|^2 / d per unit MSE; smoothing makes it (sum |q_i||k_i|)^2 / d.
    const int d = tq::test::main_head_dim(), n = 300;
    const auto& v = tq::variants().front();
    std::vector<double> energy(d);
    for (int i = 0; i < d; ++i) energy[i] = i < d / 8 ? 16.0 : 1.0 / 16;
    auto keys = tq::test::gaussian(std::size_t(n) * d, 41), queries = tq::test::gaussian(std::size_t(n) * d, 42);
    for (std::size_t i = 0; i < keys.size(); ++i) {
        keys[i] *= float(std::sqrt(energy[i % d]));
        queries[i] /= float(std::sqrt(energy[i % d]));
    }
    double error[2] = {0, 0};
    for (int smooth : {0, 1}) {
        const tq::Quantizer quant(d, {tq::rate(v), tq::rate(v), FA_TQ_SCALE_DEFAULT, FA_TQ_SCALE_FORMAT_F16, FA_TQ_CENTER_NONE,
                                      16, FA_TQ_NO_SINKS, smooth ? FA_TQ_SMOOTH_KEYS : FA_TQ_SMOOTH_NONE});
        KVCache cache(quant, 1, 1, n);
        std::vector<float> out(d), decoded(std::size_t(n) * d);
        for (int t = 0; t < n; ++t)
            cache.attention(0, t, {&queries[std::size_t(t) * d], std::size_t(d)}, {&keys[std::size_t(t) * d], std::size_t(d)},
                            {&keys[std::size_t(t) * d], std::size_t(d)}, out);
        cache.dequantize(0, 0, n, Kind::key, decoded);
        for (int t = 64; t < n; ++t)  // once the statistics have settled: each query against each later-block key
            for (int u = 64; u < n; u += 7) {
                double e = 0;
                for (int i = 0; i < d; ++i) e += double(queries[std::size_t(t) * d + i]) * (decoded[std::size_t(u) * d + i] - keys[std::size_t(u) * d + i]);
                error[smooth] += e * e;
            }
    }
    // The ratio of the two forms is 29x at d = 128 for these energies; the fourth-root
    // scales and the floor leave less, but at least 4x.
    CHECK(error[1] < 0.25 * error[0]);
}

TEST_CASE("levers: sinks decode exactly, and ring, evict and clear keep block data and sinks right") {
    const int d = tq::test::main_head_dim(), heads = 2, n = 90, drop = 37;
    const auto& v = tq::variants().front();
    const tq::Quantizer quant(d, with_bits(kAllLevers, tq::rate(v), tq::rate(v)), 3);
    const std::size_t token = std::size_t(heads) * d;
    const auto x = offset_vectors(n, heads, d, 5.0f, 21);
    KVCache linear(quant, 2, heads, 128), ring(quant, 2, heads, 32, KVCache::Mode::ring);
    for (int t = 0; t < n; ++t)
        for (int l = 0; l < 2; ++l)
            for (Kind k : {Kind::key, Kind::value}) {
                linear.quantize(l, t, {&x[t * token], token}, k);
                ring.quantize(l, t, {&x[t * token], token}, k);
            }
    std::vector<float> all(n * token), window(32 * token), sink(2 * token);
    linear.dequantize(1, 0, n, Kind::value, all);
    linear.dequantize(1, 0, 2, Kind::value, sink);
    CHECK(std::equal(sink.begin(), sink.end(), x.begin()));  // the first 2 positions are kept exact
    ring.dequantize(1, n - 32, 32, Kind::value, window);      // the ring's window: the linear cache's bytes
    CHECK(std::equal(window.begin(), window.end(), all.begin() + (n - 32) * token));
    linear.evict(drop);
    std::vector<float> after((n - drop) * token);
    linear.dequantize(1, 0, n - drop, Kind::value, after);
    CHECK(std::equal(after.begin(), after.end(), all.begin() + drop * token));
    linear.clear();
    KVCache fresh(quant, 2, heads, 128);
    for (int t = 0; t < 40; ++t)
        for (KVCache* c : {&linear, &fresh}) c->quantize(0, t, {&x[t * token], token}, Kind::key);
    std::vector<float> p(40 * token), q(40 * token);
    linear.dequantize(0, 0, 40, Kind::key, p);
    fresh.dequantize(0, 0, 40, Kind::key, q);
    CHECK(p == q);
}

TEST_CASE("levers: per-layer configs store each layer as a cache of its own state would") {
    const auto& lo = tq::variants().front();
    const auto& hi = tq::variants().back();
    if (lo.head_dim != hi.head_dim) return;  // per-layer configs share one head dim
    const int d = lo.head_dim, heads = 2, n = 20;
    const tq::Quantizer q0(d, {tq::rate(lo), tq::rate(lo)}, 1), q1(d, with_bits(kAllLevers, tq::rate(hi), tq::rate(lo)), 2);
    const tq::Quantizer* layers[] = {&q0, &q1, &q0};
    KVCache mixed(layers, heads, 32);
    KVCache only0(q0, 3, heads, 32), only1(q1, 3, heads, 32);
    CHECK(mixed.bytes_per_token() == (2 * only0.bytes_per_token() + only1.bytes_per_token()) / 3);
    const std::size_t token = std::size_t(heads) * d;
    const auto x = offset_vectors(n, heads, d, 2.0f, 4);
    std::vector<float> out(2 * token), a(n * token), b(n * token);
    const auto q = tq::test::gaussian(2 * token, 9);
    for (int t = 0; t < n; ++t)
        for (int l = 0; l < 3; ++l) {
            mixed.attention(l, t, q, {&x[t * token], token}, {&x[t * token], token}, out);
            (l == 1 ? only1 : only0).attention(l, t, q, {&x[t * token], token}, {&x[t * token], token}, out);
        }
    for (int l = 0; l < 3; ++l) {
        mixed.dequantize(l, 0, n, Kind::key, a);
        (l == 1 ? only1 : only0).dequantize(l, 0, n, Kind::key, b);
        CHECK(a == b);
    }
    // a layer's calls take that layer's state: the C API refuses another
    const fa_tq_state* states[] = {q0.get(), q1.get()};
    fa_tq_cache* c = fa_tq_cache_new_layers(states, 2, heads, 8, false);
    REQUIRE(c);
    CHECK(fa_tq_quantize(q0.get(), c, 1, 0, x.data(), true) == TQ_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(fa_tq_last_error()).find("layer 1") != std::string::npos);
    CHECK(fa_tq_quantize(q1.get(), c, 1, 0, x.data(), true) == FA_TQ_OK);
    fa_tq_cache_free(c);
    CHECK(fa_tq_cache_new_layers(nullptr, 2, heads, 8, false) == nullptr);
    const fa_tq_state* with_null[] = {q0.get(), nullptr};
    CHECK(fa_tq_cache_new_layers(with_null, 2, heads, 8, false) == nullptr);
    CHECK(std::string(fa_tq_last_error()).find("state is NULL") != std::string::npos);
}

TEST_CASE("levers: every ISA writes the same cache bytes, means and sinks included") {
    const std::string active = tq_active_isa();
    const int d = tq::test::main_head_dim(), heads = 2, n = 40;
    const auto& v = tq::variants().back();
    const std::size_t token = std::size_t(heads) * d;
    const auto x = offset_vectors(n, heads, d, 4.0f, 31);
    std::vector<std::vector<std::uint8_t>> bytes;
    for (const auto& isa : tq::available_isas()) {
        REQUIRE(tq_set_isa(isa.c_str()) == TQ_OK);
        fa_tq_state* s = fa_tq_init(
            d, tq::test::config(tq::rate(v), tq::rate(v), FA_TQ_SCALE_FORMAT_F16, FA_TQ_CENTER_BOTH, 8, 2, FA_TQ_SMOOTH_KEYS), 5);
        REQUIRE(s);
        fa_tq_cache* cache = fa_tq_cache_new(s, 1, heads, n);
        std::vector<float> out(token);
        for (int t = 0; t < n; ++t)
            REQUIRE(fa_tq_attention(s, cache, 0, t, &x[t * token], heads, &x[t * token], &x[t * token], 0, out.data()) ==
                    FA_TQ_OK);
        std::vector<std::uint8_t> all;
        for (const fa_tq_stream* st : {&cache->layers[0].keys, &cache->layers[0].values}) {
            all.insert(all.end(), st->codes.begin(), st->codes.end());
            for (const auto* half : {&st->means, &st->smooth}) {
                const auto* m = reinterpret_cast<const std::uint8_t*>(half->data());
                all.insert(all.end(), m, m + half->size() * 2);
            }
            const auto* sc = reinterpret_cast<const std::uint8_t*>(st->scales16.data());
            all.insert(all.end(), sc, sc + st->scales16.size() * 2);
        }
        bytes.push_back(all);
        fa_tq_cache_free(cache);
        fa_tq_free(s);
    }
    REQUIRE(tq_set_isa(active.c_str()) == TQ_OK);
    for (const auto& b : bytes) CHECK(b == bytes.front());
}

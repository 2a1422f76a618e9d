// The compressed cache: positions, eviction, ring mode, byte accounting, and
// bad input that must change nothing.
#include "cache_snapshot.hpp"
#include "cache_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <limits>

using tq::KVCache;
using tq::test::Snapshot;
using tq::Kind;

TEST_CASE("cache: bytes per token, K4/V2 at d=128 is 100 per KV head (104 with float scales)") {
    if (!tq::test::has_config(128, 4, 2)) return;
    const tq::Quantizer quant(128, {4, 2});
    KVCache cache(quant, 4, 16, 2048);
    CHECK(cache.bytes_per_token() == 4 * 16 * 100);
    // the default centers and smooths keys: a mean and channel scales of 128 halves each
    // per block of 128 positions
    CHECK(cache.bytes_per_token_all_in() == doctest::Approx(4 * 16 * (100 + 2 * 128 * 2.0 / 128)));
    // plus, per (layer, head), the block data one window can touch (7 + 3 + 2048 / 128 blocks
    // of 2 x 128 halves), the running sums (3 x 128 doubles) and a sink (2 x 128 floats)
    CHECK(cache.bytes_total() >= 4 * 16 * 100 * 2048);
    CHECK(cache.bytes_total() < 4 * 16 * (100 * 2048 + 26 * 128 * 4 + 128 * 24 + 128 * 8) + 4 * 4096);  // + bookkeeping
    const double fp32 = 4.0 * 16 * 128 * 4 * 2;
    CHECK(fp32 / cache.bytes_per_token_all_in() >= 9.8);
    const tq::Quantizer plain(128, {4, 2, FA_TQ_SCALE_DEFAULT, FA_TQ_SCALE_FORMAT_F32, FA_TQ_CENTER_NONE, 0, FA_TQ_NO_SINKS,
                                    FA_TQ_SMOOTH_NONE});
    KVCache float_scales(plain, 4, 16, 2048);
    CHECK(float_scales.bytes_per_token() == 4 * 16 * 104);
    CHECK(float_scales.bytes_per_token_all_in() == 4 * 16 * 104);
}

TEST_CASE("cache: seq_len is the length every layer holds for keys and values") {
    const int d = tq::test::main_head_dim();
    const tq::Quantizer quant(d, {tq::rate(tq::variants().front()), tq::rate(tq::variants().front())});
    KVCache cache(quant, 2, 2, 8);
    CHECK(cache.seq_len() == 0);
    tq::test::fill(cache, 2, 3, d, Kind::key, 1);
    CHECK(cache.seq_len() == 0);  // no values yet
    tq::test::fill(cache, 2, 3, d, Kind::value, 2);
    CHECK(cache.seq_len() == 3);
    cache.clear();
    CHECK(cache.seq_len() == 0);
}

TEST_CASE("cache: eviction drops the oldest positions of every layer") {
    const int d = tq::test::main_head_dim(), L = 3, H = 2, n = 20, drop = 7;
    const tq::Quantizer quant(d, {tq::rate(tq::variants().front()), tq::rate(tq::variants().back())}, 3);
    KVCache cache(quant, L, H, 32);
    tq::test::fill(cache, L, n, d, Kind::key, 1);
    tq::test::fill(cache, L, n, d, Kind::value, 2);
    const std::size_t token = std::size_t(H) * d;
    std::vector<std::vector<float>> before_k(L, std::vector<float>(n * token)), before_v = before_k;
    std::vector<float> after_k((n - drop) * token), after_v((n - drop) * token);
    for (int l = 0; l < L; ++l) {
        cache.dequantize(l, 0, n, Kind::key, before_k[l]);
        cache.dequantize(l, 0, n, Kind::value, before_v[l]);
    }
    cache.evict(drop);
    CHECK(cache.seq_len() == n - drop);
    for (int l = 0; l < L; ++l) {  // in every layer, position p now holds what p + drop held
        CAPTURE(l);
        cache.dequantize(l, 0, n - drop, Kind::key, after_k);
        cache.dequantize(l, 0, n - drop, Kind::value, after_v);
        CHECK(std::equal(after_k.begin(), after_k.end(), before_k[l].begin() + drop * token));
        CHECK(std::equal(after_v.begin(), after_v.end(), before_v[l].begin() + drop * token));
    }
    CHECK_THROWS_AS(cache.evict(n), tq::Error);  // more than is held
    cache.evict(n - drop);
    CHECK(cache.seq_len() == 0);
}

TEST_CASE("cache: a copy continues exactly as its source, and other shapes or quantizers are refused") {
    const int d = tq::test::main_head_dim(), L = 2, H = 2, n = 40, max_seq = 64;
    const auto& v = tq::variants().back();
    const tq::Quantizer quant(d, {tq::rate(v), tq::rate(v)}, 5), other(d, {tq::rate(v), tq::rate(v)}, 6);
    for (auto mode : {KVCache::Mode::linear, KVCache::Mode::ring}) {
        CAPTURE(int(mode));
        KVCache src(quant, L, H, max_seq, mode), dst(quant, L, H, max_seq, mode);
        const std::size_t token = std::size_t(H) * d, q_row = 2 * token;
        const auto x = tq::test::gaussian((n + 8) * (2 * token + q_row), 11);
        auto step = [&](KVCache& c, int t, std::vector<float>& out) {  // every layer attends token t
            const float* base = &x[t * (2 * token + q_row)];
            for (int l = 0; l < L; ++l)
                c.attention(l, t, {base + 2 * token, q_row}, {base, token}, {base + token, token}, out);
        };
        std::vector<float> a(q_row), b(q_row);
        for (int t = 0; t < n; ++t) step(src, t, a);
        for (int t = 0; t < 5; ++t) step(dst, t, b);  // something to be replaced
        dst.copy_from(src);
        CHECK(dst.seq_len() == src.seq_len());
        for (int t = n; t < n + 8; ++t) {  // the same next tokens give the same bytes
            step(src, t, a);
            step(dst, t, b);
            CHECK(a == b);
        }
        KVCache fewer_heads(quant, L, 1, max_seq, mode), another_quantizer(other, L, H, max_seq, mode);
        CHECK_THROWS_AS(fewer_heads.copy_from(src), tq::Error);
        CHECK_THROWS_AS(another_quantizer.copy_from(src), tq::Error);
        CHECK(fa_tq_cache_copy(nullptr, nullptr) != FA_TQ_OK);
    }
}

TEST_CASE("cache: a deserialized cache continues exactly as the serialized one, and bad bytes change nothing") {
    const int d = tq::test::main_head_dim(), L = 2, H = 2, n = 45, max_seq = 32;
    const auto& v = tq::variants().back();
    const tq::Quantizer quant(d, {tq::rate(v), tq::rate(v)}, 7), seed_8(d, {tq::rate(v), tq::rate(v)}, 8);
    for (auto mode : {KVCache::Mode::linear, KVCache::Mode::ring}) {
        CAPTURE(int(mode));
        const int written = mode == KVCache::Mode::ring ? n : max_seq - 4;  // the ring wraps
        KVCache src(quant, L, H, max_seq, mode), dst(quant, L, H, max_seq, mode);
        const std::size_t token = std::size_t(H) * d, q_row = 2 * token;
        const auto x = tq::test::gaussian((n + 4) * (2 * token + q_row), 13);
        auto step = [&](KVCache& c, int t, std::vector<float>& out) {
            const float* base = &x[t * (2 * token + q_row)];
            for (int l = 0; l < L; ++l)
                c.attention(l, t, {base + 2 * token, q_row}, {base, token}, {base + token, token}, out);
        };
        std::vector<float> a(q_row), b(q_row);
        for (int t = 0; t < written; ++t) step(src, t, a);
        const std::vector<std::uint8_t> bytes = src.serialize();
        step(dst, 0, b);
        const std::vector<std::uint8_t> before = dst.serialize();
        // Refused, and dst as it was: every truncation point of the header, a cut in the
        // middle, a byte too many, an altered length field, another shape.
        for (std::size_t cut : {std::size_t(0), std::size_t(3), std::size_t(16), bytes.size() / 2, bytes.size() - 1})
            CHECK(fa_tq_cache_deserialize(nullptr, bytes.data(), cut) != FA_TQ_OK);
        for (std::size_t cut : {std::size_t(0), std::size_t(3), std::size_t(16), bytes.size() / 2, bytes.size() - 1})
            CHECK_THROWS_AS(dst.deserialize({bytes.data(), cut}), tq::Error);
        std::vector<std::uint8_t> longer = bytes;
        longer.push_back(0);
        CHECK_THROWS_AS(dst.deserialize(longer), tq::Error);
        // Another ring size, or a linear cache too short for the positions written.
        const bool ring = mode == KVCache::Mode::ring;
        KVCache other_shape(quant, L, H, ring ? max_seq + 1 : written - 1, mode), other_seed(seed_8, L, H, max_seq, mode);
        CHECK_THROWS_AS(other_shape.deserialize(bytes), tq::Error);
        if (!ring) {  // a longer linear cache takes them, and continues as src does
            KVCache longer_cache(quant, L, H, 2 * max_seq, mode), again(quant, L, H, 2 * max_seq, mode);
            longer_cache.deserialize(bytes);
            for (int t = 0; t < written; ++t) step(again, t, b);
            step(longer_cache, written, a);
            step(again, written, b);
            CHECK(a == b);
        }
        CHECK_THROWS_AS(other_seed.deserialize(bytes), tq::Error);  // same sizes, other codes
        CHECK(dst.serialize() == before);
        dst.deserialize(bytes);
        CHECK(dst.serialize() == bytes);
        for (int t = written; t < written + 4; ++t) {  // the same next tokens give the same bytes
            step(src, t, a);
            step(dst, t, b);
            CHECK(a == b);
        }
    }
}

TEST_CASE("cache: saved bytes with an exponent bit flipped are refused, or attend to finite outputs") {
    // Bit 6 of a byte is the top exponent bit of every half, float and double whose
    // last byte it is (a scale, mean, sink, sum or bound made huge or tiny) and a high
    // bit of every count.  Sampled bytes with an odd stride (every position in a
    // word), both scale formats, both kinds of cache; each layer attends on its own.
    const int d = tq::test::main_head_dim(), L = 2, H = 2, max_seq = 24;
    const auto& v = tq::variants().back();
    for (auto format : {FA_TQ_SCALE_FORMAT_F16, FA_TQ_SCALE_FORMAT_F32})
      for (auto mode : {KVCache::Mode::linear, KVCache::Mode::ring}) {
        CAPTURE(int(format));
        CAPTURE(int(mode));
        const tq::Quantizer quant(d, {tq::rate(v), tq::rate(v), FA_TQ_SCALE_DEFAULT, format}, 5);
        const int written = mode == KVCache::Mode::ring ? 30 : max_seq - 2;
        KVCache cache(quant, L, H, max_seq, mode);
        const std::size_t token = std::size_t(H) * d, q_row = 2 * token;
        const auto x = tq::test::gaussian((written + 1) * (2 * token + q_row), 17);
        std::vector<float> out(q_row);
        auto attend = [&](int l, int t) {
            const float* base = &x[t * (2 * token + q_row)];
            cache.attention(l, t, {base + 2 * token, q_row}, {base, token}, {base + token, token}, out);
        };
        for (int t = 0; t < written; ++t)
            for (int l = 0; l < L; ++l) attend(l, t);
        const std::vector<std::uint8_t> bytes = cache.serialize();
        const std::size_t stride = 2 * (bytes.size() / 3000) + 1;
        int beyond_bounds = 0, accepted = 0;
        for (std::size_t i = 0; i < bytes.size(); i += stride) {
            std::vector<std::uint8_t> flipped = bytes;
            flipped[i] ^= 0x40;
            try {
                cache.deserialize(flipped);
            } catch (const tq::Error& e) {
                beyond_bounds += std::string(e.what()).find("beyond its recorded bound") != std::string::npos;
                REQUIRE(cache.serialize() == bytes);
                continue;
            }
            ++accepted;
            CAPTURE(i);
            for (int l = 0; l < L; ++l) {
                try {
                    attend(l, written);
                } catch (const tq::Error&) {  // a range error is a clean refusal
                    continue;
                }
                for (float y : out) REQUIRE(std::isfinite(y));
            }
            cache.deserialize(bytes);
        }
        CHECK(beyond_bounds > 0);  // the values' check refused some (the header's checks refuse others)
        CHECK(accepted > 0);       // codes: any bits are levels
    }
}

TEST_CASE("cache: ring mode maps pos to pos % max_seq_len and keeps the last window") {
    const int d = tq::test::main_head_dim(), H = 2, max_seq = 8, n = 29;
    const auto& v = tq::variants().front();
    const tq::Quantizer quant(d, {tq::rate(v), tq::rate(v)}, 4);
    KVCache ring(quant, 1, H, max_seq, KVCache::Mode::ring);
    KVCache linear(quant, 1, H, n);  // the same tokens without wrapping
    const std::size_t token = std::size_t(H) * d;
    const auto x = tq::test::gaussian(n * token, 9);
    for (int t = 0; t < n; ++t) {
        ring.quantize(0, t, {&x[t * token], token}, Kind::key);
        linear.quantize(0, t, {&x[t * token], token}, Kind::key);
    }
    std::vector<float> got(max_seq * token), want(max_seq * token);
    ring.dequantize(0, n - max_seq, max_seq, Kind::key, got);
    linear.dequantize(0, n - max_seq, max_seq, Kind::key, want);
    CHECK(got == want);
    std::vector<float> one(token);
    CHECK_THROWS_AS(ring.dequantize(0, n - max_seq - 1, 1, Kind::key, one), tq::Error);  // overwritten
    CHECK_THROWS_AS(ring.quantize(0, n - max_seq - 1, {x.data(), token}, Kind::key), tq::Error);
    ring.quantize(0, n - 2, {x.data(), token}, Kind::key);  // overwrite inside the window
    linear.quantize(0, n - 2, {x.data(), token}, Kind::key);
    ring.dequantize(0, n - 2, 1, Kind::key, one);
    linear.dequantize(0, n - 2, 1, Kind::key, {got.data(), token});
    CHECK(std::equal(one.begin(), one.end(), got.begin()));
    CHECK_THROWS_AS(ring.evict(1), tq::Error);
}

namespace {

// Caches in the states the bad calls meet: c (2 layers, 3 positions), full (every
// position written), ring (values ahead of keys), big (keys of norm ~1e30), and the
// inputs that make each call fail.
struct BadInput {
    static constexpr int L = 2, H = 2, max_seq = 8;
    const int d = tq::test::main_head_dim();
    const tq_bit_kernels& v = tq::variants().front();
    // float scales: the keys of norm 1e30 below stay storable
    const fa_tq_config config = tq::test::config(tq::rate(v), tq::rate(v), FA_TQ_SCALE_FORMAT_F32);
    fa_tq_state* s = fa_tq_init(d, config, 1);
    fa_tq_state* other = fa_tq_init(d, config, 2);  // another seed
    fa_tq_cache *c = nullptr, *full = nullptr, *ring = nullptr, *big = nullptr;
    const std::size_t token = std::size_t(H) * d;
    std::vector<float> x = tq::test::gaussian(token, 1), nan_last = x, inf_first = x,
                       huge = std::vector<float>(token, std::numeric_limits<float>::max()),
                       q = std::vector<float>(2 * token, 0.5f), q_nan = q, out = std::vector<float>(2 * token, 0.0f),
                       huge_q = q, big_x = x, large_q = q;

    BadInput() {
        REQUIRE(s);
        REQUIRE(other);
        c = fa_tq_cache_new(s, L, H, max_seq);
        full = fa_tq_cache_new(s, 1, H, max_seq);
        ring = fa_tq_cache_new_ring(s, 1, H, max_seq);
        big = fa_tq_cache_new(s, 1, H, max_seq);
        REQUIRE((c && full && ring && big));
        for (int t = 0; t < 3; ++t)
            for (int l = 0; l < L; ++l)
                for (bool key : {true, false}) REQUIRE(fa_tq_quantize(s, c, l, t, x.data(), key) == FA_TQ_OK);
        nan_last[token - 1] = std::numeric_limits<float>::quiet_NaN();  // the last head: earlier heads must not land
        inf_first[0] = -std::numeric_limits<float>::infinity();
        q_nan[3] = std::numeric_limits<float>::quiet_NaN();
        for (int t = 0; t < max_seq; ++t)
            for (bool key : {true, false}) REQUIRE(fa_tq_quantize(s, full, 0, t, x.data(), key) == FA_TQ_OK);
        for (int t = 0; t < 2 * max_seq; ++t) REQUIRE(fa_tq_quantize(s, ring, 0, t, x.data(), false) == FA_TQ_OK);
        for (int t = 0; t < 12; ++t) REQUIRE(fa_tq_quantize(s, ring, 0, t, x.data(), true) == FA_TQ_OK);
        for (auto& e : huge_q) e = 1e38f;  // finite, but its rotation would not be
        for (auto& e : big_x) e *= 1e29f;
        for (auto& e : large_q) e = 1e8f;  // |q| x |k| ~ 1e39: each finite, the score not
        for (int t = 0; t < 3; ++t)
            for (bool key : {true, false}) REQUIRE(fa_tq_quantize(s, big, 0, t, big_x.data(), key) == FA_TQ_OK);
    }
    ~BadInput() {
        for (fa_tq_cache* k : {c, full, ring, big}) fa_tq_cache_free(k);
        fa_tq_free(other);
        fa_tq_free(s);
    }

    // One failing call: its status, a message naming the function, and the cache it
    // was given byte-identical afterwards (no out written either).
    void check(fa_tq_cache* cache, int expected, const std::function<int()>& call) {
        const Snapshot before(cache);
        CHECK(call() == expected);
        CHECK(std::string(fa_tq_last_error()).find("fa_tq_") != std::string::npos);
        CHECK(Snapshot(cache) == before);
        CHECK(std::all_of(out.begin(), out.end(), [](float e) { return e == 0.0f; }));
    }
};

}  // namespace

TEST_CASE_FIXTURE(BadInput, "cache: each bad call returns the documented error and leaves the cache byte-identical") {
    constexpr int E_ARG = TQ_ERROR_INVALID_ARGUMENT;
    SUBCASE("quantize NULL state") { check(c, E_ARG, [&] { return fa_tq_quantize(nullptr, c, 0, 3, x.data(), true); }); }
    SUBCASE("quantize NULL cache") { check(c, E_ARG, [&] { return fa_tq_quantize(s, nullptr, 0, 3, x.data(), true); }); }
    SUBCASE("quantize NULL vec") { check(c, E_ARG, [&] { return fa_tq_quantize(s, c, 0, 3, nullptr, true); }); }
    SUBCASE("quantize other state") { check(c, E_ARG, [&] { return fa_tq_quantize(other, c, 0, 3, x.data(), true); }); }
    SUBCASE("quantize layer -1") { check(c, E_ARG, [&] { return fa_tq_quantize(s, c, -1, 3, x.data(), true); }); }
    SUBCASE("quantize layer L") { check(c, E_ARG, [&] { return fa_tq_quantize(s, c, L, 3, x.data(), true); }); }
    SUBCASE("quantize gap") { check(c, E_ARG, [&] { return fa_tq_quantize(s, c, 0, 4, x.data(), true); }); }
    SUBCASE("quantize pos -1") { check(c, E_ARG, [&] { return fa_tq_quantize(s, c, 0, -1, x.data(), false); }); }
    SUBCASE("quantize past max_seq") {
        check(full, E_ARG, [&] { return fa_tq_quantize(s, full, 0, max_seq, x.data(), true); });
    }
    SUBCASE("quantize NaN") {
        check(c, TQ_ERROR_NONFINITE, [&] { return fa_tq_quantize(s, c, 0, 3, nan_last.data(), true); });
    }
    SUBCASE("quantize -Inf") {
        check(c, TQ_ERROR_NONFINITE, [&] { return fa_tq_quantize(s, c, 1, 1, inf_first.data(), false); });
    }
    SUBCASE("quantize huge") { check(c, TQ_ERROR_RANGE, [&] { return fa_tq_quantize(s, c, 1, 1, huge.data(), false); }); }
    SUBCASE("attention NULL q") {
        check(c, E_ARG, [&] { return fa_tq_attention(s, c, 0, 3, nullptr, 2 * H, x.data(), x.data(), 0, out.data()); });
    }
    SUBCASE("attention NULL out") {
        check(c, E_ARG, [&] { return fa_tq_attention(s, c, 0, 3, q.data(), 2 * H, x.data(), x.data(), 0, nullptr); });
    }
    SUBCASE("attention heads 3") {
        check(c, E_ARG, [&] { return fa_tq_attention(s, c, 0, 3, q.data(), 3, x.data(), x.data(), 0, out.data()); });
    }
    SUBCASE("attention NaN q") {
        check(c, TQ_ERROR_NONFINITE,
              [&] { return fa_tq_attention(s, c, 0, 3, q_nan.data(), 2 * H, x.data(), x.data(), 0, out.data()); });
    }
    SUBCASE("attention NaN v") {
        check(c, TQ_ERROR_NONFINITE,
              [&] { return fa_tq_attention(s, c, 0, 3, q.data(), 2 * H, x.data(), nan_last.data(), 0, out.data()); });
    }
    SUBCASE("attention NaN k") {
        check(c, TQ_ERROR_NONFINITE,
              [&] { return fa_tq_attention(s, c, 0, 3, q.data(), 2 * H, nan_last.data(), x.data(), 0, out.data()); });
    }
    SUBCASE("attention query beyond TQ_MAX_NORM") {
        check(c, TQ_ERROR_RANGE,
              [&] { return fa_tq_attention(s, c, 0, 3, huge_q.data(), 2 * H, x.data(), x.data(), 0, out.data()); });
    }
    SUBCASE("attention scores overflow") {
        check(big, TQ_ERROR_RANGE, [&] {
            return fa_tq_attention(s, big, 0, 3, large_q.data(), 2 * H, big_x.data(), big_x.data(), 0, out.data());
        });
    }
    SUBCASE("attention negative scale") {
        check(c, E_ARG, [&] { return fa_tq_attention(s, c, 0, 3, q.data(), 2 * H, x.data(), x.data(), -1, out.data()); });
    }
    SUBCASE("attention gap") {
        check(c, E_ARG, [&] { return fa_tq_attention(s, c, 0, 5, q.data(), 2 * H, x.data(), x.data(), 0, out.data()); });
    }
    SUBCASE("attention past max_seq") {
        check(full, E_ARG,
              [&] { return fa_tq_attention(s, full, 0, max_seq, q.data(), 2 * H, x.data(), x.data(), 0, out.data()); });
    }
    SUBCASE("attention ring behind newest value") {
        check(ring, E_ARG,
              [&] { return fa_tq_attention(s, ring, 0, 12, q.data(), 2 * H, x.data(), x.data(), 0, out.data()); });
    }
    SUBCASE("evict too many") { check(c, E_ARG, [&] { return fa_tq_cache_evict(c, 4); }); }
    SUBCASE("evict negative") { check(c, E_ARG, [&] { return fa_tq_cache_evict(c, -1); }); }
    SUBCASE("evict ring") { check(ring, E_ARG, [&] { return fa_tq_cache_evict(ring, 1); }); }
    SUBCASE("clear NULL") { check(c, E_ARG, [&] { return fa_tq_cache_clear(nullptr); }); }
    SUBCASE("bytes NULL") { check(c, E_ARG, [&] { return fa_tq_cache_bytes(nullptr, nullptr, nullptr); }); }
}

TEST_CASE_FIXTURE(BadInput, "cache: dequantize refuses positions out of range, negative counts and NULL out") {
    std::vector<float> dq(token * 4);
    const Snapshot before(c);
    CHECK(fa_tq_dequantize(s, c, 0, 2, 2, true, dq.data()) == nullptr);
    CHECK(fa_tq_dequantize(s, c, 0, 0, -1, true, dq.data()) == nullptr);
    CHECK(fa_tq_dequantize(s, c, 0, 0, 1, true, nullptr) == nullptr);
    CHECK(fa_tq_dequantize(s, c, 5, 0, 1, true, dq.data()) == nullptr);
    CHECK(fa_tq_dequantize(s, c, 0, 0, 0, true, dq.data()) == dq.data());
    CHECK(fa_tq_cache_seq_len(nullptr) == -1);
    CHECK(Snapshot(c) == before);
}

TEST_CASE_FIXTURE(BadInput, "cache: construction refuses unsupported shapes and configs with one-prefix messages") {
    const Snapshot before(c);
    CHECK(fa_tq_init(100, config, 1) == nullptr);
    CHECK(tq_last_status() == TQ_ERROR_UNSUPPORTED);
    CHECK(std::string(fa_tq_last_error()).find("this build has head_dim") != std::string::npos);
    CHECK(std::string(fa_tq_last_error()).rfind("fa_tq_init: no kernels for head_dim 100", 0) == 0);  // one prefix
    CHECK(fa_tq_init(d, tq::test::config(9, 2), 1) == nullptr);
    CHECK(fa_tq_init(d, tq::test::config(tq::rate(v), tq::rate(v), FA_TQ_SCALE_FORMAT_DEFAULT, FA_TQ_CENTER_DEFAULT, 0, 0, FA_TQ_SMOOTH_DEFAULT, static_cast<fa_tq_scale>(3)), 1) == nullptr);
    for (fa_tq_config bad : {tq::test::config(4, 2, static_cast<fa_tq_scale_format>(3)),
                             tq::test::config(4, 2, FA_TQ_SCALE_FORMAT_DEFAULT, static_cast<fa_tq_center>(5)),
                             tq::test::config(4, 2, FA_TQ_SCALE_FORMAT_DEFAULT, FA_TQ_CENTER_KEYS, 48),
                             tq::test::config(4, 2, FA_TQ_SCALE_FORMAT_DEFAULT, FA_TQ_CENTER_KEYS, -64),
                             tq::test::config(4, 2, FA_TQ_SCALE_FORMAT_DEFAULT, FA_TQ_CENTER_KEYS, 64, 65),
                             tq::test::config(4, 2, FA_TQ_SCALE_FORMAT_DEFAULT, FA_TQ_CENTER_KEYS, 64, -2),
                             tq::test::config(4, 2, FA_TQ_SCALE_FORMAT_DEFAULT, FA_TQ_CENTER_KEYS, 64, 0,
                                              static_cast<fa_tq_smooth>(3))}) {
        bad.key_bits = bad.value_bits = tq::rate(v);
        CHECK(fa_tq_init(d, bad, 1) == nullptr);
        CHECK(tq_last_status() == TQ_ERROR_INVALID_ARGUMENT);
        CHECK(std::string(fa_tq_last_error()).find("fa_tq_init: config.") == 0);
    }
    CHECK(fa_tq_cache_new(nullptr, 1, 1, 1) == nullptr);
    CHECK(fa_tq_cache_new(s, 0, 1, 1) == nullptr);
    CHECK(fa_tq_cache_new(s, 1, -2, 1) == nullptr);
    CHECK(fa_tq_cache_new_ring(s, 1, 1, 0) == nullptr);
    CHECK(fa_tq_cache_new(s, 1 << 20, 1 << 20, 1 << 20) == nullptr);
    CHECK(fa_tq_cache_new(s, 1 << 24, 1 << 16, 1 << 24) == nullptr);  // the element count wraps size_t
    CHECK(tq_last_status() == TQ_ERROR_INVALID_ARGUMENT);
    fa_tq_cache_free(nullptr);
    fa_tq_free(nullptr);
    CHECK(Snapshot(c) == before);
}

TEST_CASE("cache: the C++ API checks span sizes") {
    const int d = tq::test::main_head_dim();
    const auto& v = tq::variants().front();
    CHECK_THROWS_AS(tq::Quantizer(100, {tq::rate(v), tq::rate(v)}), tq::Error);
    const tq::Quantizer quant(d, {tq::rate(v), tq::rate(v)});
    KVCache cache(quant, 1, 2, 4);
    std::vector<float> short_vec(d), out(2 * d);
    CHECK_THROWS_AS(cache.quantize(0, 0, short_vec, Kind::key), tq::Error);
    CHECK_THROWS_AS(cache.dequantize(0, 0, 1, Kind::key, short_vec), tq::Error);
    std::vector<float> odd(d + 1);
    CHECK_THROWS_AS(cache.attention(0, 0, odd, out, out, odd), tq::Error);
    CHECK(cache.seq_len() == 0);
}

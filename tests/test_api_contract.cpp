// The C API's contract on hostile input (issue 13): no C++ exception and no
// undefined behaviour for any argument, success means a finite output, and a
// failure leaves a one-line message and the cache unchanged.
#include "cache_snapshot.hpp"
#include "cache_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>

using tq::test::Snapshot;

namespace {

// The last error's message starts with "fn: ".
bool error_names(const char* fn) {
    const std::string message = fa_tq_last_error();
    return message.rfind(fn, 0) == 0 && message.compare(std::strlen(fn), 2, ": ") == 0;
}

// A config whose enum field at `field` holds the raw int `value`, as a C caller can store.
template <class Enum>
fa_tq_config with_raw(Enum fa_tq_config::*field, int value) {
    fa_tq_config c = tq::test::config(tq::rate(tq::variants().front()), tq::rate(tq::variants().front()));
    static_assert(sizeof(Enum) == sizeof(int));
    std::memcpy(&(c.*field), &value, sizeof value);
    return c;
}

// One head of norm `norm` (a Gaussian direction).
std::vector<float> head_of_norm(int d, double norm, std::uint64_t seed) {
    auto x = tq::test::gaussian(std::size_t(d), seed);
    const double n = std::sqrt(tq::test::dot(x, x));
    for (auto& e : x) e = float(e * (norm / n));
    return x;
}

}  // namespace

TEST_CASE("contract: enum fields outside their enumerators are refused, read as ints") {
    const int d = tq::test::main_head_dim();
    for (int value : {-1, 7, 1000, INT_MIN, INT_MAX}) {
        CAPTURE(value);
        for (const fa_tq_config& bad : {with_raw(&fa_tq_config::scale, value), with_raw(&fa_tq_config::scale_format, value),
                                        with_raw(&fa_tq_config::center, value), with_raw(&fa_tq_config::smooth, value)}) {
            CHECK(fa_tq_init(d, bad, 1) == nullptr);
            CHECK(tq_last_status() == TQ_ERROR_INVALID_ARGUMENT);
            const std::string message = fa_tq_last_error(), number = std::to_string(value);
            CHECK(message.find(number.c_str()) != std::string::npos);
            CHECK(message.find(" is not an fa_tq_") != std::string::npos);
        }
    }
}

TEST_CASE("contract: cache shapes beyond any allocation are refused at once with a message") {
    const bool issue = tq::test::has_config(256, 4, 2);  // the issue's head_dim and bits, where built
    const float bits = tq::rate(tq::variants().front());
    fa_tq_state* s = issue ? fa_tq_init(256, tq::test::config(4, 2), 1)
                           : fa_tq_init(tq::test::main_head_dim(), tq::test::config(bits, bits), 1);
    REQUIRE(s);
    size_t per_slot = 0;  // bytes of one position of one head
    fa_tq_cache* one = fa_tq_cache_new(s, 1, 1, 1);
    REQUIRE(one);
    REQUIRE(fa_tq_cache_bytes(one, &per_slot, nullptr) == FA_TQ_OK);
    fa_tq_cache_free(one);
    // 2^30 heads x this many positions: 1.5 x 2^63 bytes, within size_t, beyond vector::max_size();
    // the issue's shape: 2^30 x 83886080 positions of at least 16 bytes, 2^60 bytes or more
    const int seq = int((std::size_t(3) << 32) / per_slot);
    const fa_tq_state* layers[] = {s, s};
    const struct {
        const char* fn;
        int layers, heads, seq;
    } shapes[] = {{"fa_tq_cache_new", 1, 1 << 30, seq},
                  {"fa_tq_cache_new_ring", 1, 1 << 30, seq},
                  {"fa_tq_cache_new_layers", 2, 1 << 30, seq / 2},
                  {"fa_tq_cache_new", 1 << 30, 83886080, 1}};  // the issue's: no per-layer allocation first
    for (const auto& shape : shapes) {
        CAPTURE(shape.fn);
        CAPTURE(shape.layers);
        const std::string fn = shape.fn;
        fa_tq_cache* c = fn == "fa_tq_cache_new"        ? fa_tq_cache_new(s, shape.layers, shape.heads, shape.seq)
                         : fn == "fa_tq_cache_new_ring" ? fa_tq_cache_new_ring(s, shape.layers, shape.heads, shape.seq)
                                                        : fa_tq_cache_new_layers(layers, 2, shape.heads, shape.seq, false);
        CHECK(c == nullptr);
        CHECK(tq_last_status() == TQ_ERROR_INVALID_ARGUMENT);
        CHECK(error_names(shape.fn));
        CHECK(std::string(fa_tq_last_error()).find('\n') == std::string::npos);
        fa_tq_cache_free(c);
    }
    fa_tq_free(s);
}

TEST_CASE("contract: fa_tq_attention succeeds with a finite output or refuses and changes nothing") {
    const int d = tq::test::main_head_dim(), max_seq = 8;
    const float bits = tq::rate(tq::variants().front());
    const fa_tq_config configs[] = {
        tq::test::config(bits, bits),  // every lever at its default: half scales, centering, sinks, smoothing
        tq::test::config(bits, bits, FA_TQ_SCALE_FORMAT_F32, FA_TQ_CENTER_NONE, 0, FA_TQ_NO_SINKS, FA_TQ_SMOOTH_NONE)};
    const float scales[] = {0.0f, 1.0f, 1e20f, 1e36f, FLT_MAX};
    const double query_norms[] = {0, 1e-3, 1, 100, 1e3};
    const double key_norms[] = {0, 1e-30, 1e-3, 1};
    int refused = 0;
    for (const fa_tq_config& config : configs) {
        fa_tq_state* s = fa_tq_init(d, config, 3);
        REQUIRE(s);
        for (double key_norm : key_norms) {
            fa_tq_cache* c = fa_tq_cache_new(s, 1, 1, max_seq);
            REQUIRE(c);
            const auto key = head_of_norm(d, key_norm, 5), value = head_of_norm(d, 1, 6);
            for (int t = 0; t < 3; ++t) {
                REQUIRE(fa_tq_quantize(s, c, 0, t, key.data(), true) == FA_TQ_OK);
                REQUIRE(fa_tq_quantize(s, c, 0, t, value.data(), false) == FA_TQ_OK);
            }
            for (float scale : scales)
                for (double query_norm : query_norms) {
                    CAPTURE(key_norm);
                    CAPTURE(scale);
                    CAPTURE(query_norm);
                    const auto q = head_of_norm(d, query_norm, 7);
                    std::vector<float> out(std::size_t(d), -1.0f);
                    const Snapshot before(c);
                    const int rc = fa_tq_attention(s, c, 0, 3, q.data(), 1, key.data(), value.data(), scale, out.data());
                    const double effective = scale > 0 ? scale : 1 / std::sqrt(double(d));
                    if (effective * query_norm <= 1e25) CHECK(rc == FA_TQ_OK);  // far from any limit
                    if (rc == FA_TQ_OK) {
                        CHECK(std::all_of(out.begin(), out.end(), [](float e) { return std::isfinite(e); }));
                        REQUIRE(fa_tq_cache_clear(c) == FA_TQ_OK);  // write positions 0..2 again
                        for (int t = 0; t < 3; ++t) {
                            REQUIRE(fa_tq_quantize(s, c, 0, t, key.data(), true) == FA_TQ_OK);
                            REQUIRE(fa_tq_quantize(s, c, 0, t, value.data(), false) == FA_TQ_OK);
                        }
                    } else {
                        ++refused;
                        CHECK(rc == TQ_ERROR_RANGE);
                        CHECK(error_names("fa_tq_attention"));
                        CHECK(Snapshot(c) == before);
                        CHECK(std::all_of(out.begin(), out.end(), [](float e) { return e == -1.0f; }));
                    }
                }
            fa_tq_cache_free(c);
        }
        fa_tq_free(s);
    }
    CHECK(refused > 0);  // FLT_MAX x 100 cannot be scaled into float
}

TEST_CASE("contract: evicting every position of a full cache empties it") {
    const int d = tq::test::main_head_dim(), H = 2, max_seq = 8;
    const float bits = tq::rate(tq::variants().front());
    for (const fa_tq_config& config :
         {tq::test::config(bits, bits),
          tq::test::config(bits, bits, FA_TQ_SCALE_FORMAT_F32, FA_TQ_CENTER_NONE, 0, FA_TQ_NO_SINKS, FA_TQ_SMOOTH_NONE)}) {
        fa_tq_state* s = fa_tq_init(d, config, 3);
        REQUIRE(s);
        fa_tq_cache* c = fa_tq_cache_new(s, 2, H, max_seq);
        REQUIRE(c);
        const auto x = tq::test::gaussian(std::size_t(H) * d, 8);
        for (int l = 0; l < 2; ++l)
            for (int t = 0; t < max_seq; ++t)
                for (bool key : {true, false}) REQUIRE(fa_tq_quantize(s, c, l, t, x.data(), key) == FA_TQ_OK);
        CHECK(fa_tq_cache_evict(c, max_seq) == FA_TQ_OK);
        CHECK(fa_tq_cache_seq_len(c) == 0);
        std::vector<float> out(std::size_t(H) * d);
        CHECK(fa_tq_attention(s, c, 0, 0, x.data(), H, x.data(), x.data(), 0, out.data()) == FA_TQ_OK);
        fa_tq_cache_free(c);
        fa_tq_free(s);
    }
}

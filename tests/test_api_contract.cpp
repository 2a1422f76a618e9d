// The C API's contract on hostile input (issue 13): no C++ exception and no
// undefined behaviour for any argument, success means a finite output, and a
// failure leaves a one-line message and the cache unchanged.
#include "cache_support.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>

namespace {

// The last error's message starts with "fn: ".
bool error_names(const char* fn) {
    const std::string message = fa_tq_last_error();
    return message.rfind(fn, 0) == 0 && message.compare(std::strlen(fn), 2, ": ") == 0;
}

}  // namespace

TEST_CASE("contract: cache shapes beyond any allocation are refused at once with a message") {
    const int d = tq::test::has_config(256, 4, 2) ? 256 : tq::test::main_head_dim();
    const float bits = tq::test::has_config(256, 4, 2) ? 4 : tq::rate(tq::variants().front());
    fa_tq_state* s = fa_tq_init(d, tq::test::config(bits, bits == 4 ? 2 : bits), 1);
    REQUIRE(s);
    size_t per_slot = 0;  // bytes of one position of one head
    fa_tq_cache* one = fa_tq_cache_new(s, 1, 1, 1);
    REQUIRE(one);
    REQUIRE(fa_tq_cache_bytes(one, &per_slot, nullptr) == FA_TQ_OK);
    fa_tq_cache_free(one);
    // 2^30 heads x this many positions: 1.5 x 2^63 bytes, within size_t, beyond vector::max_size()
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

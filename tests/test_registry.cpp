// The registry: every compiled combination is found; everything else is a
// clear error that names what the build has.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>
#include <tuple>

TEST_CASE("registry: every compiled (head_dim, key bits, value bits) resolves") {
    std::set<int> dims;
    std::set<float> rates;
    for (const auto& v : tq::variants()) {
        dims.insert(v.head_dim);
        rates.insert(tq::rate(v));
        CHECK(v.bits == v.rate_eighths / 8);
        CHECK(v.high_coords == v.head_dim * (v.rate_eighths % 8) / 8);
    }
    CHECK(tq::variants().size() == dims.size() * rates.size());
    for (int d : dims)
        for (float kb : rates)
            for (float vb : rates) {
                const tq_kernels* c = nullptr;
                REQUIRE(tq_find(d, kb, vb, &c) == TQ_OK);
                CHECK(c == &tq::find(d, kb, vb));  // chosen once: the same table every time
                CHECK(c->head_dim == d);
                CHECK(c->key->rate_eighths == kb * 8);
                CHECK(c->value->rate_eighths == vb * 8);
                CHECK(c->key->head_dim == d);
                CHECK(c->value->head_dim == d);
                CHECK(std::string(c->isa) == tq_active_isa());
            }
}

TEST_CASE("registry: unsupported combinations are a clear error listing the build") {
    const auto& first = tq::variants().front();
    const tq_kernels* out = nullptr;
    const int fd = first.head_dim;
    const float fb = tq::rate(first), nan = std::nanf("");
    // not compiled, out of range, not a multiple of 1/8, NaN
    const std::vector<std::tuple<int, float, float>> unsupported = {
        {100, fb, fb}, {fd, 9, fb}, {fd, fb, 0}, {-1, -1, -1}, {fd, 3.3f, fb}, {fd, fb, nan}, {fd, 8.125f, fb}};
    for (const auto& [d, kb, vb] : unsupported) {
        CAPTURE(d);
        CHECK(tq_find(d, kb, vb, &out) == TQ_ERROR_UNSUPPORTED);
        CHECK(out == nullptr);
        const std::string message = tq_last_error();
        CHECK(message.find("head_dim " + std::to_string(d)) != std::string::npos);
        CHECK(message.find("this build has head_dim {") != std::string::npos);
        CHECK(message.find(std::to_string(first.head_dim)) != std::string::npos);
        CHECK_THROWS_AS(tq::find(d, kb, vb), tq::Error);
    }
    for (float bad : {3.3f, 8.125f, nan}) {  // the message says what a rate must be
        CHECK(tq_find(fd, bad, fb, &out) == TQ_ERROR_UNSUPPORTED);
        CHECK(std::string(tq_last_error()).find("steps of 1/8") != std::string::npos);
    }
    CHECK(tq_find(100, fb, fb, &out) == TQ_ERROR_UNSUPPORTED);
    CHECK(std::string(tq_last_error()).find("steps of 1/8") == std::string::npos);
    try {
        tq::find(100, fb, fb);
    } catch (const tq::Error& e) {
        CHECK(e.code() == TQ_ERROR_UNSUPPORTED);
        CHECK(std::string(e.what()).find("key and value bits each in {") != std::string::npos);
    }
    CHECK(tq_find(first.head_dim, fb, fb, nullptr) == TQ_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(tq_last_error()).find("NULL") != std::string::npos);
}

TEST_CASE("registry: variant listing and signs validate their arguments") {
    CHECK(tq_variant(tq_variant_count()) == nullptr);
    CHECK(tq_variant(0) == &tq::variants()[0]);
    float signs[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    CHECK(tq_rotation_signs(100, 1, signs) == TQ_ERROR_UNSUPPORTED);
    CHECK(signs[0] == 1);
    CHECK(tq_rotation_signs(tq::variants()[0].head_dim, 1, nullptr) == TQ_ERROR_INVALID_ARGUMENT);
    CHECK_THROWS_AS(tq::rotation_signs(100, 1), tq::Error);
}

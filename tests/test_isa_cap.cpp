// The CPU cap (tq_set_max_isa, the environment's TQ_MAX_ISA): the library behaves
// as if this CPU ran no ISA above it, and a name that is no ISA is refused.
#include "test_support.hpp"

#include "isas.hpp"

#include <doctest/doctest.h>

#include <iterator>
#include <string>
#include <vector>

namespace {

constexpr const char* kIsas[] = {TQ_ISA_NAME_LIST};  // best first
constexpr int kCount = static_cast<int>(std::size(kIsas));

int rank(const std::string& isa) {
    for (int i = 0; i < kCount; ++i)
        if (isa == kIsas[i]) return i;
    FAIL("unknown ISA " << isa);
    return -1;
}

// Puts back the cap and the active ISA the test case found.
struct RestoreIsa {
    std::string cap = tq_max_isa(), active = tq_active_isa();
    ~RestoreIsa() {
        tq_set_max_isa(cap.c_str());
        tq_set_isa(active.c_str());
    }
};

}  // namespace

TEST_CASE("ISA cap: nothing above the cap runs here, everything under it still does") {
    RestoreIsa restore;
    REQUIRE(tq_set_max_isa(nullptr) == TQ_OK);
    CHECK(std::string(tq_max_isa()) == kIsas[0]);
    std::vector<bool> runs, compiled;
    for (const char* isa : kIsas) {
        runs.push_back(tq_isa_available(isa) == 1);
        compiled.push_back(tq_isa_compiled(isa) == 1);
    }
    const auto& v = tq::variants().front();
    for (int cap = 0; cap < kCount; ++cap) {
        CAPTURE(kIsas[cap]);
        REQUIRE(tq_set_max_isa(kIsas[cap]) == TQ_OK);
        CHECK(std::string(tq_max_isa()) == kIsas[cap]);
        for (int i = 0; i < kCount; ++i) {
            CAPTURE(kIsas[i]);
            CHECK((tq_isa_available(kIsas[i]) == 1) == (i >= cap && runs[i]));
            CHECK((tq_isa_compiled(kIsas[i]) == 1) == compiled[i]);
        }
        CHECK(rank(tq_active_isa()) >= cap);
        const auto available = tq::available_isas();
        REQUIRE(!available.empty());
        CHECK(rank(available.front()) >= cap);
        const tq_kernels* k = nullptr;
        REQUIRE(tq_find(v.head_dim, tq::rate(v), tq::rate(v), &k) == TQ_OK);
        CHECK(rank(k->isa) >= cap);
        if (cap > 0) {
            CHECK(tq_set_isa(kIsas[cap - 1]) == TQ_ERROR_UNSUPPORTED);
            CHECK(tq_find_isa(kIsas[cap - 1], v.head_dim, tq::rate(v), tq::rate(v), &k) == TQ_ERROR_UNSUPPORTED);
        }
    }
    CHECK(std::string(tq_active_isa()) == "scalar");  // the last cap leaves nothing else
    REQUIRE(tq_set_max_isa(nullptr) == TQ_OK);
    for (int i = 0; i < kCount; ++i) CHECK((tq_isa_available(kIsas[i]) == 1) == runs[i]);
}

TEST_CASE("ISA cap: a name that is no ISA is refused and changes nothing") {
    RestoreIsa restore;
    REQUIRE(tq_set_max_isa("avx2") == TQ_OK);
    for (const char* bad : {"avx3", "AVX2", "", "avx2 "}) {
        CAPTURE(bad);
        CHECK(tq_set_max_isa(bad) == TQ_ERROR_INVALID_ARGUMENT);
        const std::string message = tq_last_error();
        std::string quoted = "'";  // appended, not operator+(const char*, string&&): GCC 12's -Wrestrict misfires on that
        quoted += bad;
        CHECK(message.find(quoted + "' is not an ISA") != std::string::npos);
        CHECK(message.find("known: " TQ_ISA_NAMES) != std::string::npos);
        CHECK(std::string(tq_max_isa()) == "avx2");
        CHECK(tq_isa_available("avx512") == 0);
    }
}

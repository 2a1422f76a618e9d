// The test runner: doctest, plus `--tq-isa=NAME` to run every test on one ISA's
// kernels.  CTest registers the suite once per ISA; on a CPU (or build) without
// that ISA the run exits 77, which CTest reports as skipped.  TQ_MAX_ISA (the
// environment) makes the CPU count as lacking every ISA above it; an invalid
// value fails the run rather than testing uncapped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "turboquant/registry.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

// Counts the test cases that ran: a --test-case filter that matches none (as a
// name with ';' would, split in two by CTest) must fail, not pass empty.
std::atomic<int> g_ran{0};

struct RanCounter : doctest::IReporter {
    explicit RanCounter(const doctest::ContextOptions&) {}
    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override {}
    void test_case_start(const doctest::TestCaseData&) override { ++g_ran; }
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats&) override {}
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("ran_counter", 1, RanCounter);

}  // namespace

int main(int argc, char** argv) {
    constexpr int kSkipped = 77;
    std::vector<char*> args;
    const char* isa = nullptr;
    bool listing = false;
    for (int i = 0; i < argc; ++i) {
        if (std::strncmp(argv[i], "--tq-isa=", 9) == 0) {
            isa = argv[i] + 9;
            continue;
        }
        listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
        args.push_back(argv[i]);
    }
    const char* cap = tq_max_isa();
    if (!listing && !cap) {
        std::printf("error: %s\n", tq_last_error());
        return 1;
    }
    if (isa && !listing && tq_set_isa(isa) != TQ_OK) {
        std::printf("skipped: %s (ISAs up to %s count as run here)\n", tq_last_error(), cap);
        return kSkipped;
    }
    doctest::Context context(int(args.size()), args.data());
    const int rc = context.run();
    if (rc == 0 && !listing && !context.shouldExit() && g_ran == 0) {
        std::printf("error: no test case matched the filters\n");
        return 1;
    }
    return rc;
}

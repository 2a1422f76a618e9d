#include "last_error.hpp"

#include "turboquant/registry.h"

#include <cstdio>

namespace {
thread_local std::string last_error;
thread_local char fixed_error[256];  // fail_noalloc's message
thread_local bool use_fixed = false;
thread_local int last_code = TQ_OK;
}

namespace tq::detail {

int fail(tq_status code, std::string message) {
    last_error = std::move(message);
    use_fixed = false;
    last_code = code;
    return code;
}

void fail_noalloc(tq_status code, const char* fn, const char* what) noexcept {
    std::snprintf(fixed_error, sizeof fixed_error, "%s: %s", fn, what);
    use_fixed = true;
    last_code = code;
}

}  // namespace tq::detail

extern "C" const char* tq_last_error(void) { return use_fixed ? fixed_error : last_error.c_str(); }
extern "C" int tq_last_status(void) { return last_code; }

#include "last_error.hpp"

#include "turboquant/registry.h"

namespace {
thread_local std::string last_error;
thread_local int last_code = TQ_OK;
}

namespace tq::detail {

int fail(tq_status code, std::string message) {
    last_error = std::move(message);
    last_code = code;
    return code;
}

}  // namespace tq::detail

extern "C" const char* tq_last_error(void) { return last_error.c_str(); }
extern "C" int tq_last_status(void) { return last_code; }

#include "last_error.hpp"

#include "turboquant/registry.h"

namespace {
thread_local std::string last_error;
}

namespace tq::detail {

int fail(tq_status code, std::string message) {
    last_error = std::move(message);
    return code;
}

void clear_error() { last_error.clear(); }

}  // namespace tq::detail

extern "C" const char* tq_last_error(void) { return last_error.c_str(); }

// The thread-local message behind tq_last_error(), and the C API's error path.
#pragma once

#include "turboquant/kernel_types.h"

#include <exception>
#include <new>
#include <string>

namespace tq::detail {

// Records `message` and `code` for tq_last_error() / tq_last_status() and returns
// `code`, so C entry points can `return fail(TQ_ERROR_..., "...")`.
int fail(tq_status code, std::string message);

// Records "fn: what" without allocating (truncated to a fixed buffer): the error
// path when building a message is what failed.
void fail_noalloc(tq_status code, const char* fn, const char* what) noexcept;

// Runs a C entry point's body so that no C++ exception crosses into C: an
// exception (std::bad_alloc while building a message, or any other) becomes
// `on_error`, with a one-line message naming fn.
template <class T, class Body>
T guard(const char* fn, T on_error, Body&& body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        fail_noalloc(TQ_ERROR_OUT_OF_MEMORY, fn, "out of memory");
    } catch (const std::exception& e) {
        fail_noalloc(TQ_ERROR_OUT_OF_MEMORY, fn, e.what());
    } catch (...) {
        fail_noalloc(TQ_ERROR_OUT_OF_MEMORY, fn, "unexpected exception");
    }
    return on_error;
}

}  // namespace tq::detail

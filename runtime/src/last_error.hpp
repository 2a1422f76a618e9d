// The thread-local message behind tq_last_error(), and the C API's error path.
#pragma once

#include "turboquant/kernel_types.h"

#include <string>

namespace tq::detail {

// Records `message` and `code` for tq_last_error() / tq_last_status() and returns
// `code`, so C entry points can `return fail(TQ_ERROR_..., "...")`.
int fail(tq_status code, std::string message);

}  // namespace tq::detail

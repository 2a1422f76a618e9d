// The thread-local message behind tq_last_error(), and the C API's error path.
#pragma once

#include "turboquant/kernel_types.h"

#include <string>

namespace tq::detail {

// Records `message` for tq_last_error() and returns `code`, so C entry points
// can `return fail(TQ_ERROR_..., "...")`.
int fail(tq_status code, std::string message);
void clear_error();

}  // namespace tq::detail

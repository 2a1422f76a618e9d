#include "fp32_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace tq::reference {
#include "fp32_attention_impl.inc"
}  // namespace tq::reference

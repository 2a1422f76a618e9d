// The registry's tables of every compiled variant, expanded from kernels.inc.
#pragma once

#include "turboquant/kernel_types.h"

#include <span>

namespace tq::detail {

struct RotationEntry {
    int head_dim;
    const char* isa;
    tq_rotate_fn rotate;
    tq_rotate_fn unrotate;
};

std::span<const RotationEntry> rotation_table();
std::span<const tq_bit_kernels> bit_kernel_table();  // with the ISA in bit_kernel_isa()
std::span<const char* const> bit_kernel_isa();

}  // namespace tq::detail

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
    tq_product_fn product;  // the ISA's, in every head dim's row
};

struct VariantEntry {
    const char* isa;
    tq_bit_kernels kernels;
};

std::span<const RotationEntry> rotation_table();
std::span<const VariantEntry> variant_table();

}  // namespace tq::detail

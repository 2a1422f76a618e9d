#include "kernel_names.hpp"

namespace tq::cli {
namespace {

#define TQ_KERNEL(KIND, D, EIGHTHS, ISA, SYMBOL, FILE) {#KIND, D, EIGHTHS, #ISA, #SYMBOL, FILE},
#define TQ_ROTATION(D, ISA, ROTATE, UNROTATE, PRODUCT)
#define TQ_VARIANT(D, RATE, ISA, ENCODE, DECODE, SCORE, ACCUMULATE, PACK, UNPACK, SCORE_INT, ACCUMULATE_INT)
constexpr KernelRef kKernels[] = {
#include "kernels.inc"
};
#undef TQ_KERNEL
#undef TQ_ROTATION
#undef TQ_VARIANT

}  // namespace

std::span<const KernelRef> compiled_kernels() { return kKernels; }

const KernelRef* find_kernel(std::string_view name) {
    for (const auto& k : kKernels)
        if (name == k.name) return &k;
    return nullptr;
}

}  // namespace tq::cli

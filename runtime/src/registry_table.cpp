#include "registry_table.hpp"

#include "codebooks/all.hpp"
#include "kernel_declarations.hpp"

namespace tq::detail {
namespace {

#define TQ_ROTATION(D, ISA) {D, #ISA, &tq::ISA::tq_rotate_d##D##__##ISA, &tq::ISA::tq_unrotate_d##D##__##ISA},
#define TQ_BIT_KERNELS(D, B, ISA)
constexpr RotationEntry kRotations[] = {
#include "kernels.inc"
};
#undef TQ_ROTATION
#undef TQ_BIT_KERNELS

#define TQ_ROTATION(D, ISA)
#define TQ_BIT_KERNELS(D, B, ISA)                                                                          \
    {D, tq::codebooks::d##D##_b##B::kBits, tq::codebooks::d##D##_b##B::kRateEighths,                        \
     tq::codebooks::d##D##_b##B::kCodeBytes, tq::codebooks::d##D##_b##B::kCentroids,                         \
     tq::codebooks::d##D##_b##B::kBoundaries, tq::codebooks::d##D##_b##B::kHighCoords,                       \
     tq::codebooks::d##D##_b##B::kHighCentroids, tq::codebooks::d##D##_b##B::kHighBoundaries,                \
     tq::codebooks::d##D##_b##B::kMseUnitVector, &tq::ISA::tq_encode_d##D##_b##B##__##ISA,                   \
     &tq::ISA::tq_decode_d##D##_b##B##__##ISA, &tq::ISA::tq_score_d##D##_b##B##__##ISA,                    \
     &tq::ISA::tq_accumulate_d##D##_b##B##__##ISA, &tq::scalar::tq_pack_d##D##_b##B##__scalar,             \
     &tq::scalar::tq_unpack_d##D##_b##B##__scalar},
constexpr tq_bit_kernels kBitKernels[] = {
#include "kernels.inc"
};
#undef TQ_BIT_KERNELS

#define TQ_BIT_KERNELS(D, B, ISA) #ISA,
constexpr const char* kBitKernelIsa[] = {
#include "kernels.inc"
};
#undef TQ_ROTATION
#undef TQ_BIT_KERNELS

}  // namespace

std::span<const RotationEntry> rotation_table() { return kRotations; }
std::span<const tq_bit_kernels> bit_kernel_table() { return kBitKernels; }
std::span<const char* const> bit_kernel_isa() { return kBitKernelIsa; }

}  // namespace tq::detail

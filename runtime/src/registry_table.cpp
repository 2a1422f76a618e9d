#include "registry_table.hpp"

#include "codebooks/all.hpp"
#include "kernel_declarations.hpp"

namespace tq::detail {
namespace {

#define TQ_KERNEL(KIND, D, EIGHTHS, ISA, SYMBOL, FILE)
#define TQ_VARIANT(D, RATE, ISA, ENCODE, DECODE, SCORE, ACCUMULATE, PACK, UNPACK, SCORE_INT, ACCUMULATE_INT)
#define TQ_ROTATION(D, ISA, ROTATE, UNROTATE, PRODUCT) {D, #ISA, &tq::ISA::ROTATE, &tq::ISA::UNROTATE, &tq::ISA::PRODUCT},
constexpr RotationEntry kRotations[] = {
#include "kernels.inc"
};
#undef TQ_ROTATION
#undef TQ_VARIANT

#define TQ_ROTATION(D, ISA, ROTATE, UNROTATE, PRODUCT)
#define TQ_VARIANT(D, RATE, ISA, ENCODE, DECODE, SCORE, ACCUMULATE, PACK, UNPACK, SCORE_INT, ACCUMULATE_INT)                               \
    {#ISA,                                                                                                       \
     {D, tq::codebooks::d##D##_b##RATE::kBits, tq::codebooks::d##D##_b##RATE::kRateEighths,                       \
      tq::codebooks::d##D##_b##RATE::kCodeBytes, tq::codebooks::d##D##_b##RATE::kCentroids,                       \
      tq::codebooks::d##D##_b##RATE::kBoundaries, tq::codebooks::d##D##_b##RATE::kHighCoords,                     \
      tq::codebooks::d##D##_b##RATE::kHighCentroids, tq::codebooks::d##D##_b##RATE::kHighBoundaries,              \
      tq::codebooks::d##D##_b##RATE::kMseUnitVector, &tq::ISA::ENCODE, &tq::ISA::DECODE, &tq::ISA::SCORE,         \
      &tq::ISA::ACCUMULATE, &tq::scalar::PACK, &tq::scalar::UNPACK, SCORE_INT, ACCUMULATE_INT}},
constexpr VariantEntry kVariants[] = {
#include "kernels.inc"
};
#undef TQ_KERNEL
#undef TQ_ROTATION
#undef TQ_VARIANT

}  // namespace

std::span<const RotationEntry> rotation_table() { return kRotations; }
std::span<const VariantEntry> variant_table() { return kVariants; }

}  // namespace tq::detail

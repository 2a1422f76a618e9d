#include "baselines.hpp"

namespace tq::baselines {

#define TQ_BASELINE(ISA) namespace ISA { extern const Baselines kBaselines; }
#include "baselines_isas.inc"
#undef TQ_BASELINE

const Baselines& for_isa(std::string_view isa) {
#define TQ_BASELINE(ISA) \
    if (isa == #ISA) return ISA::kBaselines;
#include "baselines_isas.inc"
#undef TQ_BASELINE
    return scalar::kBaselines;
}

}  // namespace tq::baselines

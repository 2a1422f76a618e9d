#include "baselines.hpp"

namespace tq::baselines {
namespace scalar { extern const Baselines kBaselines; }
#if TQ_BASELINES_HAS_AVX2
namespace avx2 { extern const Baselines kBaselines; }
#endif
#if TQ_BASELINES_HAS_AVX512
namespace avx512 { extern const Baselines kBaselines; }
#endif

const Baselines& for_isa(std::string_view isa) {
#if TQ_BASELINES_HAS_AVX512
    if (isa == "avx512") return avx512::kBaselines;
#endif
#if TQ_BASELINES_HAS_AVX2
    if (isa == "avx2") return avx2::kBaselines;
#endif
    return scalar::kBaselines;
}

}  // namespace tq::baselines

#include "baselines.hpp"

namespace tq::bench {
namespace scalar { extern const Baselines kBaselines; }
#if TQ_BENCH_HAS_AVX2
namespace avx2 { extern const Baselines kBaselines; }
#endif
#if TQ_BENCH_HAS_AVX512
namespace avx512 { extern const Baselines kBaselines; }
#endif

const Baselines& baselines_for(std::string_view isa) {
#if TQ_BENCH_HAS_AVX512
    if (isa == "avx512") return avx512::kBaselines;
#endif
#if TQ_BENCH_HAS_AVX2
    if (isa == "avx2") return avx2::kBaselines;
#endif
    return scalar::kBaselines;
}

}  // namespace tq::bench

// Compiled once per ISA with -DTQ_BASELINES_ISA=<isa> and that ISA's flags.
#include "baselines.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace tq::baselines::TQ_BASELINES_ISA {

#include "fp32_attention_impl.inc"

void naive_rotate(const float* signs, const float* x, float* out, int d) {
    for (int i = 0; i < d; ++i) out[i] = x[i] * signs[i];
    for (int len = 1; len < d; len <<= 1)  // the spec's fwht, verbatim
        for (int i = 0; i < d; i += len << 1)
            for (int j = 0; j < len; j++) {
                const float u = out[i + j];
                const float v = out[i + j + len];
                out[i + j] = u + v;
                out[i + j + len] = u - v;
            }
    const float scale = 1 / std::sqrt(float(d));
    for (int i = 0; i < d; ++i) out[i] *= scale;
}

float stream_sum(const float* x, std::size_t n) {
    float acc[16] = {};
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 16; ++k) acc[k] += x[i + k];
    float s = 0;
    for (float a : acc) s += a;
    for (; i < n; ++i) s += x[i];
    return s;
}

void fp32_dots(const float* q, const float* keys, std::size_t n, int d, float* out) {
    for (std::size_t t = 0; t < n; ++t) out[t] = dot(q, keys + t * d, d);
}

extern const Baselines kBaselines = {naive_rotate, stream_sum, fp32_dots, fp32_attention};

}  // namespace tq::baselines::TQ_BASELINES_ISA

// A tiny engine-side consumer of TurboQuant, built by each embedding path in
// tests/consumers/run.py: it quantizes a one-layer cache through the C++ API, runs
// the fused attention and checks it against FP32 attention over the decoded cache,
// computed here.
#include "turboquant/turboquant.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#ifndef TQ_CONSUMER_HEAD_DIM
#error "define TQ_CONSUMER_HEAD_DIM, TQ_CONSUMER_KEY_BITS and TQ_CONSUMER_VALUE_BITS"
#endif

// The smallest cosine over heads between `out` and FP32 attention of q over keys and values.
double worst_cosine(const std::vector<float>& q, const std::vector<float>& keys, const std::vector<float>& values,
                    const std::vector<float>& out, int n, int heads, int d) {
    const std::size_t token = std::size_t(heads) * d;
    double worst = 1;
    for (int h = 0; h < heads; ++h) {
        std::vector<double> w(n), o(d, 0.0);
        double top = -1e300, total = 0;
        for (int t = 0; t < n; ++t) {
            double s = 0;
            for (int i = 0; i < d; ++i) s += double(q[h * d + i]) * keys[t * token + h * d + i];
            w[t] = s / std::sqrt(double(d));
            top = std::max(top, w[t]);
        }
        for (int t = 0; t < n; ++t) total += (w[t] = std::exp(w[t] - top));
        for (int t = 0; t < n; ++t)
            for (int i = 0; i < d; ++i) o[i] += w[t] / total * values[t * token + h * d + i];
        double dot = 0, a = 0, b = 0;
        for (int i = 0; i < d; ++i) {
            dot += o[i] * out[h * d + i];
            a += o[i] * o[i];
            b += double(out[h * d + i]) * out[h * d + i];
        }
        worst = std::min(worst, dot / std::sqrt(a * b));
    }
    return worst;
}

int main() {
    constexpr int d = TQ_CONSUMER_HEAD_DIM, heads = 2, n = 64;
    const tq::Quantizer quant(d, {TQ_CONSUMER_KEY_BITS, TQ_CONSUMER_VALUE_BITS}, 7);
    tq::KVCache cache(quant, 1, heads, n);
    cache.set_threads(2);  // the attention pool: links and runs through every embedding path
    const std::size_t token = std::size_t(heads) * d;
    std::vector<float> keys(n * token), values(n * token), q(token), out(token);
    for (std::size_t i = 0; i < keys.size(); ++i) {
        keys[i] = std::sin(0.37f * float(i)) + 0.1f * std::cos(1.3f * float(i % 17));
        values[i] = std::cos(0.23f * float(i)) * (1 + 0.01f * float(i % 7));
    }
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = keys[(n - 5) * token + i] + 0.05f * std::sin(float(i));
    for (int t = 0; t + 1 < n; ++t) {
        cache.quantize(0, t, {&keys[t * token], token}, tq::Kind::key);
        cache.quantize(0, t, {&values[t * token], token}, tq::Kind::value);
    }
    cache.attention(0, n - 1, q, {&keys[(n - 1) * token], token}, {&values[(n - 1) * token], token}, out);

    // The fused attention must equal FP32 attention over the decoded cache.
    std::vector<float> dk(n * token), dv(n * token);
    cache.dequantize(0, 0, n, tq::Kind::key, dk);
    cache.dequantize(0, 0, n, tq::Kind::value, dv);
    const double vs_decoded = worst_cosine(q, dk, dv, out, n, heads, d);
    std::printf("consumer: head_dim %d, K%g/V%g: attention-output cosine %.6f vs the decoded cache\n", d,
                double(TQ_CONSUMER_KEY_BITS), double(TQ_CONSUMER_VALUE_BITS), vs_decoded);
    return vs_decoded > 0.9999 ? 0 : 1;
}

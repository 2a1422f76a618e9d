// ggml_flash_attn_ext as llama.cpp's CPU backend runs it for one layer: K and V
// tensors of the cache's type, an F16 causal mask for chunks of queries, the F32
// result permuted to [head_dim, q_heads, n_q].  See ggml_attention.hpp.
#include "ggml_attention.hpp"

#include "bench_support.hpp"

#include <ggml-cpu.h>
#include <ggml.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace tq::bench {

const char* name(GgmlKv type) {
    switch (type) {
        case GgmlKv::f16: return "f16";
        case GgmlKv::q8_0: return "q8_0";
        case GgmlKv::q4_0: return "q4_0";
    }
    return "?";
}

const char* ggml_isa() { return TQ_GGML_ISA; }

namespace {

ggml_type type_of(GgmlKv type) {
    switch (type) {
        case GgmlKv::f16: return GGML_TYPE_F16;
        case GgmlKv::q8_0: return GGML_TYPE_Q8_0;
        case GgmlKv::q4_0: return GGML_TYPE_Q4_0;
    }
    return GGML_TYPE_F16;
}

// Rows of uniform [-1, 1) floats (the bench's fill) stored in `t` as its type.
void fill_tensor(ggml_tensor* t, std::uint64_t seed) {
    const std::int64_t per_row = t->ne[0], rows = ggml_nrows(t);
    std::vector<float> x(std::size_t(per_row * rows));
    fill(x, seed);
    if (t->type == GGML_TYPE_F32)
        std::copy(x.begin(), x.end(), static_cast<float*>(t->data));
    else if (t->type == GGML_TYPE_F16)
        ggml_fp32_to_fp16_row(x.data(), static_cast<ggml_fp16_t*>(t->data), per_row * rows);
    else
        ggml_quantize_chunk(t->type, x.data(), t->data, 0, rows, per_row, nullptr);
}

}  // namespace

struct GgmlAttention::Impl {
    ggml_context* ctx = nullptr;
    ggml_threadpool* pool = nullptr;
    ggml_cgraph* graph = nullptr;
    ggml_tensor* result = nullptr;
    std::vector<std::uint8_t> work;
    ggml_cplan plan{};
    ~Impl() {
        if (pool) ggml_threadpool_free(pool);
        if (ctx) ggml_free(ctx);
    }
};

GgmlAttention::GgmlAttention(int q_heads, int kv_heads, int head_dim, int n_kv, int n_q, GgmlKv kv, int threads)
    : impl_(new Impl) {
    ggml_cpu_init();
    const ggml_type type = type_of(kv);
    const std::size_t kv_bytes = ggml_row_size(type, head_dim) * std::size_t(n_kv) * kv_heads,
                      q_bytes = sizeof(float) * std::size_t(head_dim) * n_q * q_heads,
                      mask_bytes = n_q > 1 ? sizeof(ggml_fp16_t) * std::size_t(n_kv) * n_q : 0;
    ggml_init_params params{};
    params.mem_size = 2 * kv_bytes + 2 * q_bytes + mask_bytes + 16 * ggml_tensor_overhead() + ggml_graph_overhead() +
                      (1 << 20);
    impl_->ctx = ggml_init(params);
    if (!impl_->ctx) throw std::runtime_error("ggml_init failed");
    ggml_context* ctx = impl_->ctx;

    ggml_tensor* q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, head_dim, n_q, q_heads);
    ggml_tensor* k = ggml_new_tensor_3d(ctx, type, head_dim, n_kv, kv_heads);
    ggml_tensor* v = ggml_new_tensor_3d(ctx, type, head_dim, n_kv, kv_heads);
    fill_tensor(q, 1);
    fill_tensor(k, 2);
    fill_tensor(v, 3);
    ggml_tensor* mask = nullptr;
    if (n_q > 1) {  // causal: query i sees positions up to n_kv − n_q + i
        mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_kv, n_q);
        auto* m = static_cast<ggml_fp16_t*>(mask->data);
        const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), minus_inf = ggml_fp32_to_fp16(-INFINITY);
        for (int i = 0; i < n_q; ++i)
            for (int j = 0; j < n_kv; ++j) m[std::size_t(i) * n_kv + j] = j <= n_kv - n_q + i ? zero : minus_inf;
    }
    impl_->result = ggml_flash_attn_ext(ctx, q, k, v, mask, 1.0f / std::sqrt(float(head_dim)), 0.0f, 0.0f);
    impl_->graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(impl_->graph, impl_->result);

    ggml_threadpool_params pool_params = ggml_threadpool_params_default(threads);
    impl_->pool = ggml_threadpool_new(&pool_params);
    if (!impl_->pool) throw std::runtime_error("ggml_threadpool_new failed");
    impl_->plan = ggml_graph_plan(impl_->graph, threads, impl_->pool);
    impl_->work.resize(impl_->plan.work_size);
    impl_->plan.work_data = impl_->work.data();
}

GgmlAttention::~GgmlAttention() = default;

void GgmlAttention::run() {
    if (ggml_graph_compute(impl_->graph, &impl_->plan) != GGML_STATUS_SUCCESS)
        throw std::runtime_error("ggml_graph_compute failed");
}

const float* GgmlAttention::out() const { return static_cast<const float*>(impl_->result->data); }

}  // namespace tq::bench

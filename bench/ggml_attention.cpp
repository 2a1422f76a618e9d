// One layer's attention step as llama.cpp's graph runs it on the CPU backend: cache
// writes, the rotation of quantized caches, position-major cache views, an F16 mask
// and ggml_flash_attn_ext.  See ggml_attention.hpp.
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

const char* ggml_isa() {
    return ggml_cpu_has_avx512() ? "avx512" : ggml_cpu_has_avx2() ? "avx2" : "neither avx2 nor avx512";
}

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

// The orthonormal Walsh-Hadamard matrix of order n (a power of two): entry (i, j) is
// (-1)^popcount(i & j) / sqrt(n), the matrix llama.cpp rotates quantized caches with.
void fill_hadamard(ggml_tensor* t) {
    const int n = int(t->ne[0]);
    auto* h = static_cast<float*>(t->data);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) h[i * n + j] = (__builtin_popcount(unsigned(i & j)) & 1 ? -1.0f : 1.0f) / std::sqrt(float(n));
}

// x's rows of n rotated by the Hadamard matrix `rot` (n × n), as llama.cpp's graph does
// for quantized caches: a matrix product hinted as a Hadamard one (ggml's CPU backend
// then runs a fast transform).
ggml_tensor* hadamard(ggml_context* ctx, ggml_tensor* x, ggml_tensor* rot) {
    const std::int64_t n = rot->ne[0];
    ggml_tensor* r = ggml_is_contiguous(x) ? ggml_reshape_2d(ctx, x, n, ggml_nelements(x) / n)
                                           : ggml_cont_2d(ctx, x, n, ggml_nelements(x) / n);
    r = ggml_mul_mat(ctx, rot, r);
    ggml_mul_mat_set_hint(r, GGML_HINT_SRC0_IS_HADAMARD);
    return ggml_reshape_4d(ctx, r, x->ne[0], x->ne[1], x->ne[2], x->ne[3]);
}

// The order of llama.cpp's key rotation for a head dim: the largest power of two
// (from 64) dividing it; values use 64.  0: no rotation (F16 caches).
int key_rotation(int head_dim, ggml_type type) {
    if (!ggml_is_quantized(type) || head_dim % 64) return 0;
    int n = 64;
    while (head_dim % (2 * n) == 0) n *= 2;
    return n;
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

// The graph of one layer's attention step as llama.cpp builds it with flash attention
// (llm_graph_context::build_attn with a KV cache, build_attn_mha, llama_kv_cache's
// cpy_k/cpy_v and get_k/get_v): the new tokens' q, k, v (rotated for quantized caches),
// their K and V written into the cache rows by set_rows, the cache read through
// position-major views (a row per position holding every KV head), an F16 mask of
// n_kv × n_q, flash attention with F32 accumulation, and V's rotation undone.
GgmlAttention::GgmlAttention(int q_heads, int kv_heads, int head_dim, int n_kv, int n_q, GgmlKv kv, int threads)
    : impl_(new Impl) {
    ggml_cpu_init();
    const ggml_type type = type_of(kv);
    const std::int64_t gqa = std::int64_t(kv_heads) * head_dim;
    const int k_rot = key_rotation(head_dim, type), v_rot = k_rot ? 64 : 0;
    const std::size_t kv_bytes = ggml_row_size(type, gqa) * std::size_t(n_kv),
                      q_bytes = sizeof(float) * std::size_t(head_dim) * n_q * q_heads,
                      rot_bytes = sizeof(float) * std::size_t(k_rot * k_rot + v_rot * v_rot),
                      mask_bytes = sizeof(ggml_fp16_t) * std::size_t(n_kv) * n_q;
    ggml_init_params params{};
    // the cache, the inputs, and the graph's own F32 tensors (rotated q, k, v and their
    // contiguous copies, the attention's result and its unrotated copy): at most 10 q's
    params.mem_size = 2 * kv_bytes + 10 * q_bytes + rot_bytes + mask_bytes + sizeof(std::int64_t) * n_q +
                      64 * ggml_tensor_overhead() + ggml_graph_overhead() + (1 << 20);
    impl_->ctx = ggml_init(params);
    if (!impl_->ctx) throw std::runtime_error("ggml_init failed");
    ggml_context* ctx = impl_->ctx;

    // The cache: kv_size = n_kv rows of every KV head; positions before the new tokens filled.
    ggml_tensor* k_cache = ggml_new_tensor_2d(ctx, type, gqa, n_kv);
    ggml_tensor* v_cache = ggml_new_tensor_2d(ctx, type, gqa, n_kv);
    fill_tensor(k_cache, 2);
    fill_tensor(v_cache, 3);
    // The new tokens, as the projections leave them: [head_dim, heads, n_q].
    ggml_tensor* q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, head_dim, q_heads, n_q);
    ggml_tensor* k = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, head_dim, kv_heads, n_q);
    ggml_tensor* v = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, head_dim, kv_heads, n_q);
    fill_tensor(q, 1);
    fill_tensor(k, 4);
    fill_tensor(v, 5);
    ggml_tensor* rows = ggml_new_tensor_1d(ctx, GGML_TYPE_I64, n_q);  // the cells they go to: the last n_q
    for (int i = 0; i < n_q; ++i) static_cast<std::int64_t*>(rows->data)[i] = n_kv - n_q + i;
    // Causal: query i sees positions up to n_kv − n_q + i (a decode step sees them all).
    ggml_tensor* mask = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, n_kv, n_q, 1, 1);
    auto* m = static_cast<ggml_fp16_t*>(mask->data);
    const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), minus_inf = ggml_fp32_to_fp16(-INFINITY);
    for (int i = 0; i < n_q; ++i)
        for (int j = 0; j < n_kv; ++j) m[std::size_t(i) * n_kv + j] = j <= n_kv - n_q + i ? zero : minus_inf;

    impl_->graph = ggml_new_graph(ctx);
    ggml_cgraph* gf = impl_->graph;
    ggml_tensor* rot_v = nullptr;
    if (k_rot) {
        ggml_tensor* rot_k = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k_rot, k_rot);
        rot_v = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, v_rot, v_rot);
        fill_hadamard(rot_k);
        fill_hadamard(rot_v);
        q = hadamard(ctx, q, rot_k);
        k = hadamard(ctx, k, rot_k);
        v = hadamard(ctx, v, rot_v);
    }
    ggml_build_forward_expand(gf, q);
    ggml_build_forward_expand(gf, v);
    ggml_build_forward_expand(gf, k);
    ggml_build_forward_expand(gf, ggml_set_rows(ctx, k_cache, ggml_view_2d(ctx, k, gqa, n_q, k->nb[2], 0), rows));
    ggml_build_forward_expand(gf, ggml_set_rows(ctx, v_cache, ggml_view_2d(ctx, v, gqa, n_q, v->nb[2], 0), rows));
    auto cache_view = [&](ggml_tensor* cache) {
        return ggml_view_4d(ctx, cache, head_dim, kv_heads, n_kv, 1, ggml_row_size(type, head_dim),
                            ggml_row_size(type, gqa), ggml_row_size(type, gqa * n_kv), 0);
    };
    ggml_tensor* q_heads_major = ggml_permute(ctx, q, 0, 2, 1, 3);  // [head_dim, n_q, q_heads]
    ggml_tensor* k_heads_major = ggml_permute(ctx, cache_view(k_cache), 0, 2, 1, 3);
    ggml_tensor* v_heads_major = ggml_permute(ctx, cache_view(v_cache), 0, 2, 1, 3);
    ggml_tensor* cur = ggml_flash_attn_ext(ctx, q_heads_major, k_heads_major, v_heads_major, mask,
                                           1.0f / std::sqrt(float(head_dim)), 0.0f, 0.0f);
    ggml_prec_set_acc(cur, GGML_PREC_F32);
    cur = ggml_reshape_2d(ctx, cur, cur->ne[0] * cur->ne[1], cur->ne[2] * cur->ne[3]);
    if (rot_v) cur = hadamard(ctx, cur, rot_v);
    impl_->result = cur;
    ggml_build_forward_expand(gf, cur);

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

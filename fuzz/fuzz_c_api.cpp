// libFuzzer: random call sequences on the C API (turboquant.h), checked against
// the header's contract.  A call that succeeds gives finite output; one that fails
// returns a status (or NULL) with a one-line message in fa_tq_last_error(), leaves
// the cache as it was (every byte of its state) and writes nothing to `out`.  A
// C++ exception crossing the API aborts the run, as it would a C caller.
//
// The input, front to back (tq::fuzz::Bytes; make_seeds.py writes seeds in it):
//   head dim, key bits, value bits (a byte each: mostly one the build has),
//   the config's six levers, its score path and value sum (a byte each, raw values included),
//   the seed (4 bytes),
//   the cache (kind, layers, heads, positions: a byte each),
//   then operations until the input ends: an opcode byte and its arguments.
#include "cache_snapshot.hpp"
#include "fuzz_support.hpp"
#include "turboquant/turboquant.h"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using tq::fuzz::broken;
using tq::fuzz::Bytes;

// An engine's parallel-for: the tasks in reverse order on the calling thread.
void reversed_for(void*, int n_tasks, void (*task)(void*, int), void* arg) {
    for (int i = n_tasks; i-- > 0;) task(arg, i);
}

void check_message(const char* call) {
    tq::fuzz::check_message(fa_tq_last_error(), 4096);
    if (tq_last_status() == TQ_OK) broken(std::string(call) + " failed with status TQ_OK");
}

bool finite(const float* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(x[i])) return false;
    return true;
}

float bits_arg(Bytes& in, const std::vector<float>& rates) {
    const std::uint8_t b = in.byte();
    constexpr float kOdd[] = {0, 3.3f, NAN, 9, -1, 8.125f, 1, 8};
    return b < 224 ? rates[b % rates.size()] : kOdd[b % 8];
}

// A C enum field set as a C caller can: one of its `count` values (0, the default,
// for a zero byte), `count` (one past the last) or -1.
template <class Enum>
void set_enum(Enum& field, Bytes& in, int count) {
    static_assert(sizeof(Enum) == sizeof(int));
    const int v = in.in(0, count + 1), value = v <= count ? v : -1;
    std::memcpy(&field, &value, sizeof value);
}

fa_tq_config config_arg(Bytes& in, const std::vector<float>& rates) {
    fa_tq_config c{};
    c.key_bits = bits_arg(in, rates);
    c.value_bits = bits_arg(in, rates);
    set_enum(c.scale, in, 3);
    set_enum(c.scale_format, in, 3);
    set_enum(c.center, in, 5);
    constexpr int kBlocks[] = {0, 1, 2, 16, 64, 3, -1, 131072};
    c.center_block = kBlocks[in.byte() % 8];
    constexpr int kSinks[] = {0, 0, FA_TQ_NO_SINKS, 1, 4, 64, 65, -2};
    c.sinks = kSinks[in.byte() % 8];
    set_enum(c.smooth, in, 3);
    set_enum(c.score, in, 3);      // INT8: every key rate (int16 tables above 5 bits)
    set_enum(c.value_sum, in, 3);  // INT8 with 6- to 8-bit values: refused
    return c;
}

// n floats: Gaussian at a scale, zeros, extremes, or with one non-finite or huge entry.
std::vector<float> vector_arg(Bytes& in, std::size_t n) {
    const int kind = in.byte() % 8;
    std::mt19937 rng(in.byte());
    std::normal_distribution<float> normal;
    std::vector<float> v(n);
    const float scale = std::ldexp(1.0f, kind == 5 ? in.in(-149, 106) : in.in(-20, 20));
    for (auto& x : v) x = kind == 4 ? 0.0f : normal(rng) * scale;
    if (kind == 6 && n) {
        constexpr float kSpecial[] = {NAN, INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, FLT_MIN, 1e-45f, 65504};
        v[in.u32() % n] = kSpecial[in.byte() % 8];
    }
    if (kind == 7) {
        const std::uint32_t raw = in.u32();
        float x;
        std::memcpy(&x, &raw, sizeof x);
        std::fill(v.begin(), v.end(), x);
    }
    return v;
}

float softmax_scale_arg(Bytes& in, int d) {
    constexpr float kScales[] = {0, 1, 1e-3f, 1e3f, FLT_MAX, NAN, INFINITY, -1, 1e36f, FLT_MIN};
    const std::uint8_t b = in.byte();
    return b < 200 ? (b % 2 ? 1 / std::sqrt(float(d)) : 0.0f) : kScales[b % 10];
}

// Runs one operation on the cache and checks the contract.
void operate(Bytes& in, const fa_tq_state* state, const fa_tq_state* other, fa_tq_cache* cache, int layers, int heads,
             int positions, int d) {
    const int op = in.byte() % 10;
    const fa_tq_state* s = in.byte() < 240 ? state : (in.byte() % 2 ? other : nullptr);
    const int layer = in.in(-1, layers);
    const std::uint8_t p = in.byte();
    const int pos = p < 250 ? p % (positions + 3) - 1 : int(in.u32() & 0x7fffffff);
    const std::size_t token = std::size_t(heads) * d;
    const tq::test::Snapshot before(cache);
    constexpr float kSentinel = 1234.5f;
    std::vector<float> out;
    const char* call = "";
    bool failed = false;
    switch (op) {
    case 0:
    case 1: {
        call = "fa_tq_quantize";
        const auto x = vector_arg(in, token);
        failed = fa_tq_quantize(s, cache, layer, pos, x.data(), op == 0) != FA_TQ_OK;
        break;
    }
    case 2: {
        call = "fa_tq_attention";
        const std::uint8_t h = in.byte();
        const int q_heads = h < 200 ? heads * (1 + h % 3) : h % (4 * heads + 2);
        const auto q = vector_arg(in, std::size_t(q_heads) * d), k = vector_arg(in, token), v = vector_arg(in, token);
        const float scale = softmax_scale_arg(in, d);
        out.assign(std::size_t(q_heads > 0 ? q_heads : 1) * d, kSentinel);
        failed = fa_tq_attention(s, cache, layer, pos, q.data(), q_heads, k.data(), v.data(), scale, out.data()) != FA_TQ_OK;
        if (!failed && !finite(out.data(), out.size())) broken("fa_tq_attention succeeded with a non-finite output");
        break;
    }
    case 3: {
        call = "fa_tq_dequantize";
        const int count = in.in(-1, positions + 1);
        out.assign(std::size_t(positions + 2) * token, kSentinel);
        float* got = fa_tq_dequantize(s, cache, layer, pos, count, in.byte() % 2, out.data());
        failed = got == nullptr;
        if (!failed && (got != out.data() || !finite(out.data(), std::size_t(count) * token)))
            broken("fa_tq_dequantize succeeded with a non-finite output, or not returning out");
        if (!(before == tq::test::Snapshot(cache))) broken("fa_tq_dequantize changed the cache");
        break;
    }
    case 4:
        call = "fa_tq_cache_evict";
        failed = fa_tq_cache_evict(cache, in.in(-1, positions + 1)) != FA_TQ_OK;
        break;
    case 5:
        call = "fa_tq_cache_clear";
        failed = fa_tq_cache_clear(cache) != FA_TQ_OK;
        break;
    case 6: {
        call = "fa_tq_cache_bytes";
        std::size_t per_token = 0, total = 0;
        if (fa_tq_cache_bytes(cache, &per_token, &total) != FA_TQ_OK || per_token == 0 || total < per_token)
            broken("fa_tq_cache_bytes: no sizes for a valid cache");
        if (!(fa_tq_cache_bytes_per_token_all_in(cache) >= double(per_token)) || fa_tq_cache_seq_len(cache) < 0)
            broken("fa_tq_cache_bytes_per_token_all_in or fa_tq_cache_seq_len: implausible for a valid cache");
        if (!(before == tq::test::Snapshot(cache))) broken("a query of the cache changed it");
        break;
    }
    case 8: {
        call = "fa_tq_attention_batch";
        const std::uint8_t h = in.byte();
        const int q_heads = h < 200 ? heads * (1 + h % 3) : h % (4 * heads + 2);
        const int n_tokens = in.in(-1, 6);
        const std::size_t rows = std::size_t(std::max(n_tokens, 1));
        const auto q = vector_arg(in, rows * std::size_t(std::max(q_heads, 1)) * d);
        const auto k = vector_arg(in, rows * token), v = vector_arg(in, rows * token);
        const float scale = softmax_scale_arg(in, d);
        out.assign(q.size(), kSentinel);
        failed = fa_tq_attention_batch(s, cache, layer, pos, n_tokens, q.data(), q_heads, k.data(), v.data(), scale,
                                       out.data()) != FA_TQ_OK;
        if (!failed && !finite(out.data(), out.size())) broken("fa_tq_attention_batch succeeded with a non-finite output");
        break;
    }
    case 9: {  // a saved state read back as it was, altered, cut short or lengthened
        call = "fa_tq_cache_deserialize";
        std::size_t size = 0;
        if (fa_tq_cache_serialize(cache, nullptr, 0, &size) != FA_TQ_OK || size == 0)
            broken(std::string("fa_tq_cache_serialize: no size for a valid cache: ") + fa_tq_last_error());
        std::vector<std::uint8_t> bytes(size);
        if (size > 1 && fa_tq_cache_serialize(cache, bytes.data(), size - 1, &size) == FA_TQ_OK)
            broken("fa_tq_cache_serialize wrote into a buffer too small");
        if (fa_tq_cache_serialize(cache, bytes.data(), bytes.size(), &size) != FA_TQ_OK || size != bytes.size())
            broken(std::string("fa_tq_cache_serialize failed on a valid cache: ") + fa_tq_last_error());
        const std::uint8_t how = in.byte();
        const std::size_t at = in.u32() % bytes.size();
        if (how >= 64 && how < 192) bytes[at] ^= std::uint8_t(1u << (how % 8));  // one bit flipped
        else if (how >= 192 && how < 224) bytes.resize(at);                         // truncated
        else if (how >= 224) bytes.push_back(how);                                  // one byte too many
        failed = fa_tq_cache_deserialize(cache, bytes.empty() ? nullptr : bytes.data(), bytes.size()) != FA_TQ_OK;
        if (failed && how < 64) broken(std::string("fa_tq_cache_deserialize refused its own bytes: ") + fa_tq_last_error());
        if (!failed && how < 64 && !(before == tq::test::Snapshot(cache)))
            broken("fa_tq_cache_deserialize of the cache's own bytes changed it");
        if (!failed) {  // what it accepted it holds: written again, the same bytes
            std::vector<std::uint8_t> again(bytes.size() + 1);
            // but for the capacity field: a linear cache takes bytes written by another
            // capacity (magic, version, layers and heads come before it)
            constexpr std::size_t kCapacityAt = 16;
            if (!cache->ring && bytes.size() >= kCapacityAt + 4)
                std::memcpy(&bytes[kCapacityAt], &cache->max_seq_len, 4);
            if (fa_tq_cache_serialize(cache, again.data(), again.size(), &size) != FA_TQ_OK || size != bytes.size() ||
                !std::equal(bytes.begin(), bytes.end(), again.begin()))
                broken("fa_tq_cache_deserialize accepted bytes that do not serialize back to themselves");
        }
        break;
    }
    case 7: {  // the attention executor: the cache's pool (bad counts too), an engine's, or none
        const std::uint8_t how = in.byte();
        if (how < 128) {
            call = "fa_tq_cache_set_threads";
            constexpr int kThreads[] = {1, 2, 3, 4, 0, -1, FA_TQ_MAX_THREADS + 1, INT_MIN};
            failed = fa_tq_cache_set_threads(cache, kThreads[how % 8]) != FA_TQ_OK;
        } else {
            call = "fa_tq_cache_set_parallel_for";
            failed = fa_tq_cache_set_parallel_for(cache, how % 2 ? reversed_for : nullptr, nullptr) != FA_TQ_OK;
        }
        break;
    }
    }
    if (!failed) return;
    check_message(call);
    if (!(before == tq::test::Snapshot(cache))) broken(std::string(call) + " failed and changed the cache: " + fa_tq_last_error());
    for (float x : out)
        if (x != kSentinel) broken(std::string(call) + " failed and wrote out: " + fa_tq_last_error());
}

// The cache the input asks for, or NULL (checked: a failure has a message).
fa_tq_cache* new_cache(Bytes& in, const fa_tq_state* state, const fa_tq_state* other, int& layers, int& heads,
                       int& positions) {
    const int kind = in.byte() % 8;
    layers = in.in(1, 3);
    heads = in.in(1, 3);
    positions = in.in(1, 40);
    if (kind == 7) {  // a shape too large for any machine: refused, never allocated or aborted
        constexpr int kHuge[][3] = {{1 << 30, 83886080, 1}, {INT_MAX, INT_MAX, INT_MAX}, {1, INT_MAX, INT_MAX},
                                    {0, 1, 1}, {1, -1, 1}, {1, 1, 0}};
        const auto& shape = kHuge[in.byte() % 6];
        fa_tq_cache* c = fa_tq_cache_new(state, shape[0], shape[1], shape[2]);
        if (c) broken("fa_tq_cache_new accepted a shape it cannot hold");
        check_message("fa_tq_cache_new");
        return nullptr;
    }
    fa_tq_cache* c = nullptr;
    if (kind < 4) c = fa_tq_cache_new(state, layers, heads, positions);
    else if (kind < 6) c = fa_tq_cache_new_ring(state, layers, heads, positions);
    else {
        std::vector<const fa_tq_state*> per_layer(layers, state);
        per_layer.back() = other;
        c = fa_tq_cache_new_layers(per_layer.data(), layers, heads, positions, in.byte() % 2);
    }
    if (!c) check_message("fa_tq_cache_new");
    return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const auto [dims, rates] = [] {
        std::vector<int> d;
        std::vector<float> r;
        for (std::size_t i = 0; i < tq_variant_count(); ++i) {
            const tq_bit_kernels* v = tq_variant(i);
            if (std::find(d.begin(), d.end(), v->head_dim) == d.end()) d.push_back(v->head_dim);
            const float rate = float(v->rate_eighths) / 8;
            if (std::find(r.begin(), r.end(), rate) == r.end()) r.push_back(rate);
        }
        return std::pair(d, r);
    }();
    Bytes in(data, size);
    const std::uint8_t b = in.byte();
    const int d = b < 240 ? dims[b % dims.size()] : int(in.u32() % 2048) - 1;
    const fa_tq_config config = config_arg(in, rates);
    const std::uint64_t seed = in.u32();
    fa_tq_state* state = fa_tq_init(d, config, seed);
    if (!state) {
        check_message("fa_tq_init");
        return 0;
    }
    fa_tq_state* other = fa_tq_init(d, config, seed + 1);  // the same config, another rotation
    int layers = 0, heads = 0, positions = 0;
    if (fa_tq_cache* cache = new_cache(in, state, other, layers, heads, positions)) {
        for (int ops = 0; ops < 64 && !in.empty(); ++ops) operate(in, state, other, cache, layers, heads, positions, d);
        fa_tq_cache_free(cache);
    }
    fa_tq_free(other);
    fa_tq_free(state);
    return 0;
}

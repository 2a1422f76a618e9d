// tq_find and friends: picks one ISA for this CPU once, and serves the
// (head_dim, key bits, value bits) tables built from the generated list.
#include "turboquant/registry.hpp"

#include "isas.hpp"
#include "last_error.hpp"
#include "rate_text.hpp"
#include "registry_table.hpp"
#include "rotation_signs.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

namespace tq {
namespace {

// ISAs this runtime knows, best first (generator/isas.py); scalar, last, runs everywhere.
constexpr const char* kIsaPreference[] = {TQ_ISA_NAME_LIST};
#define TQ_ISA_CHECK(NAME) &isa_cpu::NAME,
constexpr bool (*const kIsaRuns[])() = {TQ_FOR_EACH_ISA(TQ_ISA_CHECK)};
#undef TQ_ISA_CHECK
constexpr int kIsaCount = static_cast<int>(std::size(kIsaPreference));
constexpr const char* kKnownIsas = "known: " TQ_ISA_NAMES;

int isa_index(const char* isa) {
    for (int i = 0; isa && i < kIsaCount; ++i)
        if (std::strcmp(isa, kIsaPreference[i]) == 0) return i;
    return -1;
}

// The cap on the ISAs that count as run by this CPU, as an index into
// kIsaPreference: 0 no cap, kIsaCount - 1 scalar only, -1 an invalid TQ_MAX_ISA
// (no cap, and tq_max_isa reports it).  Read from TQ_MAX_ISA at first use.
std::atomic<int>& cap_index() {
    static std::atomic<int> index = [] {
        const char* cap = std::getenv("TQ_MAX_ISA");
        if (!cap || !*cap) return 0;
        if (isa_index(cap) >= 0) return isa_index(cap);
        std::fprintf(stderr, "turboquant: TQ_MAX_ISA=%s is not an ISA (%s); not capping\n", cap, kKnownIsas);
        return -1;
    }();
    return index;
}

// Whether this CPU (and OS) runs the ISA's instructions, as capped by TQ_MAX_ISA.
bool cpu_runs(int index) { return index >= cap_index().load() && kIsaRuns[index](); }

bool compiled(int index) {
    for (const auto& rot : detail::rotation_table())
        if (std::strcmp(rot.isa, kIsaPreference[index]) == 0) return true;
    return false;
}

bool usable(int index) { return index >= 0 && compiled(index) && cpu_runs(index); }

struct Registry {
    const char* isa = nullptr;
    std::vector<tq_bit_kernels> variants;  // of `isa`
    std::vector<tq_kernels> tables;        // every (head_dim, key bits, value bits)
    std::vector<int> head_dims, rates;  // rates in eighths of a bit
};

void add_unique(std::vector<int>& v, int x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

Registry build_registry(const char* isa) {
    Registry r;
    r.isa = isa;
    const auto table = detail::variant_table();
    for (const auto& v : table) {
        if (std::strcmp(v.isa, r.isa) != 0) continue;
        r.variants.push_back(v.kernels);
        add_unique(r.head_dims, v.kernels.head_dim);
        add_unique(r.rates, v.kernels.rate_eighths);
    }
    auto usable = [&](const detail::VariantEntry& v, int head_dim) {
        return v.kernels.head_dim == head_dim && std::strcmp(v.isa, r.isa) == 0;
    };
    for (const auto& rot : detail::rotation_table()) {
        if (std::strcmp(rot.isa, r.isa) != 0) continue;
        for (const auto& k : table)
            for (const auto& v : table)
                if (usable(k, rot.head_dim) && usable(v, rot.head_dim))
                    r.tables.push_back(tq_kernels{rot.head_dim, r.isa, rot.rotate, rot.unrotate, &k.kernels,
                                                  &v.kernels, rot.product});
    }
    return r;
}

// The tables of one ISA, built once and never freed: pointers into them stay
// valid until the process ends, even in other static destructors.
const Registry& registry_of(int index) {
    static const Registry* const all = [] {
        auto* r = new Registry[kIsaCount];
        for (int i = 0; i < kIsaCount; ++i) r[i] = build_registry(kIsaPreference[i]);
        return r;
    }();
    return all[index];
}

int best_usable() {
    for (int i = 0; i < kIsaCount; ++i)
        if (usable(i)) return i;
    return kIsaCount - 1;
}

// The ISA tq_find serves: TQ_ISA if set and usable, else the best this CPU runs.
std::atomic<int>& active_index() {
    static std::atomic<int> index = [] {
        const char* forced = std::getenv("TQ_ISA");
        if (forced && *forced) {
            if (usable(isa_index(forced))) return isa_index(forced);
            std::fprintf(stderr, "turboquant: TQ_ISA=%s is not available (%s; must be in the build and run on this "
                                 "CPU); using %s\n",
                         forced, kKnownIsas, kIsaPreference[best_usable()]);
        }
        return best_usable();
    }();
    return index;
}

const Registry& registry() { return registry_of(active_index().load()); }

std::string join(const std::vector<int>& v, std::string (*text)(int) = [](int x) { return std::to_string(x); }) {
    std::string s;
    for (int x : v) s += (s.empty() ? "" : ", ") + text(x);
    return "{" + s + "}";
}

// bits in eighths, or -1 if it is not a multiple of 1/8 in [1, 8] (NaN included).
int eighths_of(float bits) {
    if (!(bits >= 1 && bits <= 8)) return -1;
    const float e = bits * 8;
    return e == std::floor(e) ? static_cast<int>(e) : -1;
}

std::string bits_text(float bits) {
    const int e = eighths_of(bits);
    return e > 0 ? detail::rate_text(e) : std::to_string(bits);
}

// "no kernels for ...": the caller puts its own name in front.
std::string unsupported_message(int head_dim, float key_bits, float value_bits) {
    const Registry& r = registry();
    const bool bad_rate = eighths_of(key_bits) < 0 || eighths_of(value_bits) < 0;
    return "no kernels for head_dim " + std::to_string(head_dim) + ", key_bits " + bits_text(key_bits) +
           ", value_bits " + bits_text(value_bits) +
           (bad_rate ? " (bits must be 1..8 in steps of 1/8)" : "") + "; this build has head_dim " + join(r.head_dims) +
           " with key and value bits each in " + join(r.rates, detail::rate_text) +
           " (reconfigure with -DTQ_HEAD_DIMS=... -DTQ_BITS=... for others)";
}

const tq_kernels* lookup(const Registry& r, int head_dim, float key_bits, float value_bits) {
    const int k = eighths_of(key_bits), v = eighths_of(value_bits);
    for (const auto& t : r.tables)
        if (t.head_dim == head_dim && t.key->rate_eighths == k && t.value->rate_eighths == v) return &t;
    return nullptr;
}

bool has_head_dim(int head_dim) {
    const auto& dims = registry().head_dims;
    return std::find(dims.begin(), dims.end(), head_dim) != dims.end();
}

}  // namespace

const tq_kernels& find(int head_dim, float key_bits, float value_bits) {
    if (const tq_kernels* t = lookup(registry(), head_dim, key_bits, value_bits)) return *t;
    throw Error(TQ_ERROR_UNSUPPORTED, "tq::find: " + unsupported_message(head_dim, key_bits, value_bits));
}

std::span<const tq_bit_kernels> variants() { return registry().variants; }

std::vector<std::string> available_isas() {
    std::vector<std::string> out;
    for (int i = 0; i < kIsaCount; ++i)
        if (usable(i)) out.emplace_back(kIsaPreference[i]);
    return out;
}

std::vector<float> rotation_signs(int head_dim, std::uint64_t seed) {
    std::vector<float> signs(head_dim > 0 ? head_dim : 1);
    if (tq_rotation_signs(head_dim, seed, signs.data()) != TQ_OK)
        throw Error(TQ_ERROR_UNSUPPORTED, tq_last_error());
    return signs;
}

}  // namespace tq

using tq::detail::guard;

extern "C" {

int tq_find(int head_dim, float key_bits, float value_bits, const tq_kernels** out) {
    constexpr const char* fn = "tq_find";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (!out) return tq::detail::fail(TQ_ERROR_INVALID_ARGUMENT, "tq_find: out is NULL");
        const tq_kernels* t = tq::lookup(tq::registry(), head_dim, key_bits, value_bits);
        if (!t)
            return tq::detail::fail(TQ_ERROR_UNSUPPORTED,
                                    "tq_find: " + tq::unsupported_message(head_dim, key_bits, value_bits));
        *out = t;
        return TQ_OK;
    });
}

int tq_find_isa(const char* isa, int head_dim, float key_bits, float value_bits, const tq_kernels** out) {
    constexpr const char* fn = "tq_find_isa";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (!out) return tq::detail::fail(TQ_ERROR_INVALID_ARGUMENT, "tq_find_isa: out is NULL");
        if (!tq_isa_available(isa))
            return tq::detail::fail(TQ_ERROR_UNSUPPORTED, std::string("tq_find_isa: ISA '") + (isa ? isa : "(null)") +
                                                              "' is not in this build or not run by this CPU");
        const tq_kernels* t = tq::lookup(tq::registry_of(tq::isa_index(isa)), head_dim, key_bits, value_bits);
        if (!t)
            return tq::detail::fail(TQ_ERROR_UNSUPPORTED,
                                    "tq_find_isa: " + tq::unsupported_message(head_dim, key_bits, value_bits));
        *out = t;
        return TQ_OK;
    });
}

int tq_isa_available(const char* isa) { return tq::usable(tq::isa_index(isa)) ? 1 : 0; }

int tq_isa_compiled(const char* isa) {
    const int index = tq::isa_index(isa);
    return index >= 0 && tq::compiled(index) ? 1 : 0;
}

const char* tq_active_isa(void) { return tq::kIsaPreference[tq::active_index().load()]; }

int tq_set_isa(const char* isa) {
    constexpr const char* fn = "tq_set_isa";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (!isa) {
            tq::active_index() = tq::best_usable();
            return TQ_OK;
        }
        if (!tq_isa_available(isa))
            return tq::detail::fail(TQ_ERROR_UNSUPPORTED, std::string("tq_set_isa: ISA '") + isa +
                                                              "' is not in this build or not run by this CPU");
        tq::active_index() = tq::isa_index(isa);
        return TQ_OK;
    });
}

int tq_set_max_isa(const char* isa) {
    const int cap = isa ? tq::isa_index(isa) : 0;
    if (cap < 0)
        return tq::detail::fail(TQ_ERROR_INVALID_ARGUMENT, std::string("tq_set_max_isa: '") + isa +
                                                               "' is not an ISA (" + tq::kKnownIsas + ")");
    tq::cap_index() = cap;
    if (!tq::usable(tq::active_index().load())) tq::active_index() = tq::best_usable();
    return TQ_OK;
}

const char* tq_max_isa(void) {
    const int cap = tq::cap_index().load();
    if (cap < 0) {
        const char* env = std::getenv("TQ_MAX_ISA");
        tq::detail::fail(TQ_ERROR_INVALID_ARGUMENT, std::string("TQ_MAX_ISA=") + (env ? env : "") +
                                                        " is not an ISA (" + tq::kKnownIsas + ")");
        return nullptr;
    }
    return tq::kIsaPreference[cap];
}

int tq_rotation_signs(int head_dim, uint64_t seed, float* signs) {
    constexpr const char* fn = "tq_rotation_signs";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (!signs) return tq::detail::fail(TQ_ERROR_INVALID_ARGUMENT, "tq_rotation_signs: signs is NULL");
        if (!tq::has_head_dim(head_dim))
            return tq::detail::fail(TQ_ERROR_UNSUPPORTED, "tq_rotation_signs: head_dim " + std::to_string(head_dim) +
                                                              " is not in this build (" +
                                                              tq::join(tq::registry().head_dims) + ")");
        tq::detail::draw_rotation_signs(head_dim, seed, signs);
        return TQ_OK;
    });
}

size_t tq_variant_count(void) {
    return guard("tq_variant_count", size_t{0}, [] { return tq::registry().variants.size(); });
}

const tq_bit_kernels* tq_variant(size_t index) {
    constexpr const char* fn = "tq_variant";
    return guard(fn, static_cast<const tq_bit_kernels*>(nullptr), [&]() -> const tq_bit_kernels* {
        const auto& v = tq::registry().variants;
        if (index >= v.size()) {
            tq::detail::fail(TQ_ERROR_INVALID_ARGUMENT, "tq_variant: index " + std::to_string(index) + " >= " +
                                                            std::to_string(v.size()));
            return nullptr;
        }
        return &v[index];
    });
}

}  // extern "C"

// tq_find and friends: picks one ISA for this CPU once, and serves the
// (head_dim, key bits, value bits) tables built from the generated list.
#include "turboquant/registry.hpp"

#include "last_error.hpp"
#include "registry_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace tq {
namespace {

// ISAs this runtime knows, best first; scalar runs everywhere.
constexpr const char* kIsaPreference[] = {"scalar"};

struct Registry {
    const char* isa = nullptr;
    std::vector<tq_bit_kernels> variants;  // of `isa`
    std::vector<tq_kernels> tables;        // every (head_dim, key bits, value bits)
    std::vector<int> head_dims, bits;
};

void add_unique(std::vector<int>& v, int x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

Registry build_registry() {
    Registry r;
    const auto bit_table = detail::bit_kernel_table();
    const auto bit_isa = detail::bit_kernel_isa();
    for (const char* isa : kIsaPreference) {
        if (std::any_of(bit_isa.begin(), bit_isa.end(), [&](const char* s) { return std::strcmp(s, isa) == 0; })) {
            r.isa = isa;
            break;
        }
    }
    for (std::size_t i = 0; i < bit_table.size(); ++i) {
        if (std::strcmp(bit_isa[i], r.isa) != 0) continue;
        r.variants.push_back(bit_table[i]);
        add_unique(r.head_dims, bit_table[i].head_dim);
        add_unique(r.bits, bit_table[i].bits);
    }
    auto usable = [&](std::size_t i, int head_dim) {
        return bit_table[i].head_dim == head_dim && std::strcmp(bit_isa[i], r.isa) == 0;
    };
    for (const auto& rot : detail::rotation_table()) {
        if (std::strcmp(rot.isa, r.isa) != 0) continue;
        for (std::size_t k = 0; k < bit_table.size(); ++k)
            for (std::size_t v = 0; v < bit_table.size(); ++v)
                if (usable(k, rot.head_dim) && usable(v, rot.head_dim))
                    r.tables.push_back(tq_kernels{rot.head_dim, r.isa, rot.rotate, rot.unrotate, &bit_table[k],
                                                  &bit_table[v]});
    }
    return r;
}

const Registry& registry() {
    static const Registry r = build_registry();
    return r;
}

std::string join(const std::vector<int>& v) {
    std::string s;
    for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
    return "{" + s + "}";
}

std::string unsupported_message(int head_dim, int key_bits, int value_bits) {
    const Registry& r = registry();
    return "turboquant: no kernels for head_dim " + std::to_string(head_dim) + ", key_bits " +
           std::to_string(key_bits) + ", value_bits " + std::to_string(value_bits) +
           "; this build has head_dim " + join(r.head_dims) + " with key and value bits each in " + join(r.bits) +
           " (reconfigure with -DTQ_HEAD_DIMS=... -DTQ_BITS=... for others)";
}

const tq_kernels* lookup(int head_dim, int key_bits, int value_bits) {
    for (const auto& t : registry().tables)
        if (t.head_dim == head_dim && t.key->bits == key_bits && t.value->bits == value_bits) return &t;
    return nullptr;
}

bool has_head_dim(int head_dim) {
    const auto& dims = registry().head_dims;
    return std::find(dims.begin(), dims.end(), head_dim) != dims.end();
}

// SplitMix64 (Steele, Lea, Flood 2014): fully specified, identical on every platform.
std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

}  // namespace

const tq_kernels& find(int head_dim, int key_bits, int value_bits) {
    if (const tq_kernels* t = lookup(head_dim, key_bits, value_bits)) return *t;
    throw Error(TQ_ERROR_UNSUPPORTED, unsupported_message(head_dim, key_bits, value_bits));
}

std::span<const tq_bit_kernels> variants() { return registry().variants; }

std::vector<float> rotation_signs(int head_dim, std::uint64_t seed) {
    std::vector<float> signs(head_dim > 0 ? head_dim : 0);
    if (tq_rotation_signs(head_dim, seed, signs.data()) != TQ_OK)
        throw Error(TQ_ERROR_UNSUPPORTED, tq_last_error());
    return signs;
}

}  // namespace tq

extern "C" {

int tq_find(int head_dim, int key_bits, int value_bits, const tq_kernels** out) {
    if (!out) return tq::detail::fail(TQ_ERROR_INVALID_ARGUMENT, "tq_find: out is NULL");
    const tq_kernels* t = tq::lookup(head_dim, key_bits, value_bits);
    if (!t) return tq::detail::fail(TQ_ERROR_UNSUPPORTED, tq::unsupported_message(head_dim, key_bits, value_bits));
    *out = t;
    return TQ_OK;
}

int tq_rotation_signs(int head_dim, uint64_t seed, float* signs) {
    if (!signs) return tq::detail::fail(TQ_ERROR_INVALID_ARGUMENT, "tq_rotation_signs: signs is NULL");
    if (!tq::has_head_dim(head_dim))
        return tq::detail::fail(TQ_ERROR_UNSUPPORTED, "tq_rotation_signs: head_dim " + std::to_string(head_dim) +
                                                          " is not in this build (" +
                                                          tq::join(tq::registry().head_dims) + ")");
    const float magnitude = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
    std::uint64_t state = seed;
    for (int i = 0; i < head_dim; ++i) signs[i] = (tq::splitmix64(state) >> 63) ? -magnitude : magnitude;
    return TQ_OK;
}

size_t tq_variant_count(void) { return tq::registry().variants.size(); }

const tq_bit_kernels* tq_variant(size_t index) {
    const auto& v = tq::registry().variants;
    if (index >= v.size()) {
        tq::detail::fail(TQ_ERROR_INVALID_ARGUMENT, "tq_variant: index " + std::to_string(index) + " >= " +
                                                        std::to_string(v.size()));
        return nullptr;
    }
    return &v[index];
}

}  // extern "C"

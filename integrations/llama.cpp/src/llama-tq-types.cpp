// The TurboQuant cache types: ggml's retired type slots, one per rate
// (include/llama-tq.h says why).
#include "llama-tq.h"

#include <cstring>

namespace {

struct tq_type {
    ggml_type type;
    const char * name;
    float bits;
};

// Retired slots: 4, 5 (Q4_2, Q4_3), 31-33 (Q4_0_4_4 ...), 36-38 (IQ4_NL_4_4 ...).
constexpr tq_type k_types[] = {
    {ggml_type(4), "tq2", 2.0f},    {ggml_type(5), "tq3", 3.0f},    {ggml_type(31), "tq3.5", 3.5f},
    {ggml_type(32), "tq4", 4.0f},   {ggml_type(33), "tq5", 5.0f},   {ggml_type(36), "tq6", 6.0f},
    {ggml_type(37), "tq7", 7.0f},   {ggml_type(38), "tq8", 8.0f},
};
static_assert(GGML_TYPE_COUNT == 43, "ggml's type table changed: check that the tq slots are still retired");
static_assert(GGML_TYPE_Q5_0 == 6 && GGML_TYPE_TQ1_0 == 34 && GGML_TYPE_MXFP4 == 39,
              "the tq slots must lie between ggml's live types");

const tq_type * find(ggml_type type) {
    for (const auto & t : k_types) {
        if (t.type == type) {
            return &t;
        }
    }
    return nullptr;
}

}  // namespace

ggml_type llama_tq_type_from_name(const char * name) {
    if (name != nullptr) {
        for (const auto & t : k_types) {
            if (std::strcmp(t.name, name) == 0) {
                return t.type;
            }
        }
    }
    return GGML_TYPE_COUNT;
}

bool llama_tq_is_type(ggml_type type) {
    return find(type) != nullptr;
}

const char * llama_tq_type_name(ggml_type type) {
    const tq_type * t = find(type);
    return t ? t->name : ggml_type_name(type);
}

float llama_tq_type_bits(ggml_type type) {
    const tq_type * t = find(type);
    return t ? t->bits : 0.0f;
}

const char * llama_tq_type_names(void) {
    return "tq2, tq3, tq3.5, tq4, tq5, tq6, tq7, tq8";
}

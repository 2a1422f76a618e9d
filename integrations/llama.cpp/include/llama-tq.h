// TurboQuant as llama.cpp's KV cache: the cache types.
//
// A TurboQuant cache is asked for through llama_context_params.type_k / type_v,
// like llama.cpp's own cache types, so that every tool and binding that passes
// those fields reaches it unchanged.  The values are ggml's retired type slots
// (4, 5, 31-33, 36-38): valid enum values that ggml's tables already hold as
// "not quantized, no block size", that no GGUF file or backend accepts, and that
// a binding passes as plain integers (no new field in llama_context_params, whose
// layout bindings mirror).  Eight slots, eight rates: tq2 tq3 tq3.5 tq4 tq5 tq6
// tq7 tq8 (bits per coordinate; a rate must also be compiled into the build).
// Not to be confused with ggml's tq1_0 / tq2_0 weight types.
#pragma once

#include "ggml.h"
#include "llama.h"

#ifdef __cplusplus
extern "C" {
#endif

// The cache type named `name` ("tq4", "tq3.5"), or GGML_TYPE_COUNT if it names none.
LLAMA_API enum ggml_type llama_tq_type_from_name(const char * name);
// Whether `type` is a TurboQuant cache type.
LLAMA_API bool llama_tq_is_type(enum ggml_type type);
// "tq4" for a TurboQuant type, else ggml_type_name(type).
LLAMA_API const char * llama_tq_type_name(enum ggml_type type);
// Bits per coordinate of a TurboQuant type; 0 for any other type.
LLAMA_API float llama_tq_type_bits(enum ggml_type type);
// Every TurboQuant type name, comma-separated ("tq2, tq3, ..."), for help texts.
LLAMA_API const char * llama_tq_type_names(void);

#ifdef __cplusplus
}
#endif

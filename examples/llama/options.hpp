// tq-llama's command line.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggml_formats.hpp"

namespace llama {

// A TurboQuant config's levers beyond the bits (the library's fa_tq_config fields;
// 0: the library's default).  Written after the bits: 4/4:c=both:b=256:s=1:f32:L0-1=8/8.
struct Levers {
    struct LayerBits {
        int first, last;  // layers first..last take these bits instead
        float key_bits, value_bits;
    };
    std::vector<LayerBits> layers;  // L3=8/8, L0-1=5/4: per-layer configs
    int center = 0;        // fa_tq_center
    int center_block = 0;
    int sinks = 0;         // -1: none
    int scale_format = 0;  // fa_tq_scale_format
    int smooth = 0;        // fa_tq_smooth
    int score = 0;         // fa_tq_score
    int value_sum = 0;     // fa_tq_value_sum
    std::string text;      // as given, for the tables
};

enum class KvKind { fp32, turboquant, ggml };

struct KvConfig {
    KvKind kind = KvKind::fp32;
    float key_bits = 4, value_bits = 2;        // turboquant
    ggml::Format format = ggml::Format::q8_0;  // ggml: keys and values alike
    bool rotate = true;                        // ggml: llama.cpp's Hadamard rotation (off: NAME-norot)
    Levers levers;                             // turboquant
};

// A ggml cache type as on the command line ("q4_0", "q8_0-norot", ...), or nothing.
std::optional<KvConfig> parse_ggml_cache(std::string_view name);

struct Options {
    std::string command, model, prompt, prompt_file, text, out;
    int tokens = 64;       // generate: new tokens
    int max_prompt = 0;    // generate: keep the prompt's first N tokens (0: all)
    int window = 512;      // perplexity: tokens per window
    int windows = 0;       // perplexity: windows from the text's start (0: as many as fit)
    int limit = 0;         // tokenize: first N tokens (0: all)
    int threads = 0;       // 0: every core
    unsigned long long seed = 0;  // the TurboQuant rotation's seed
    KvConfig kv;
    std::vector<KvConfig> sweep;  // perplexity: FP32 plus these (TurboQuant or ggml), side by side
    bool ids = false;             // generate: also print the token ids
};

// Throws std::invalid_argument with a message naming the bad option.
Options parse_options(int argc, char** argv);
extern const char* const kUsage;

}  // namespace llama

#include "options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace llama {

const char* const kUsage = R"(tq-llama: a llama and Gemma 3 engine whose KV cache is FP32, TurboQuant or a ggml format.

usage: tq-llama <command> --model FILE.gguf [options]
commands:
  generate    greedy continuation of --prompt TEXT or --prompt-file FILE
              [--tokens 64] [--max-prompt N] [--ids]
  perplexity  perplexity of --text FILE in windows [--window 512] [--windows N]
              [--sweep ITEM,ITEM,...: FP32 and each config side by side, with mean
               KL divergence and top-1 agreement against FP32; an item is
               TurboQuant's K/V bits (4/2) or a ggml type (q4_0, q8_0-norot, ...)]
  tokenize    print the token ids of --text FILE [--limit N]
  logits      write the next-token logits after --prompt to --out FILE (raw float32)
options:
  --kv-cache TYPE      the KV cache (default fp32):
                       fp32
                       tq      TurboQuant; --k-bits B --v-bits B (default 4 and 2;
                               whole or in steps of 1/8, as compiled in)
                       K/V[:LEVERS]
                               TurboQuant as a --sweep item names it
                               (4/4, 3/3:L1=5/4:s=0)
                       q8_0, q4_0, q5_0, q5_1, iq4_nl
                               llama.cpp's formats for keys and values, with its
                               Hadamard rotation; NAME-norot without it
  --seed S             the TurboQuant rotation's seed (default 0)
  --threads N          threads for the matrix products (default: every core)
Prints tokens/s and the KV cache's bytes per token.
)";

namespace {

int to_int(const std::string& flag, const std::string& v, int lo) {
    char* end = nullptr;
    long x = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end || x < lo || x > 1 << 24) throw std::invalid_argument(flag + ": expected an integer >= " + std::to_string(lo) + ", got '" + v + "'");
    return static_cast<int>(x);
}

float to_bits(const std::string& flag, const std::string& v) {
    char* end = nullptr;
    float x = std::strtof(v.c_str(), &end);
    if (v.empty() || *end || !std::isfinite(x) || x < 1 || x > 8 || std::round(x * 8) != x * 8)
        throw std::invalid_argument(flag + ": expected bits 1..8 in steps of 1/8, got '" + v + "'");
    return x;
}

// "L<a>[-<b>]=<K>/<V>": layers a..b at other bits.
Levers::LayerBits to_layer_bits(const std::string& tok) {
    const auto eq = tok.find('='), slash = tok.find('/'), dash = tok.find('-');
    if (eq == std::string::npos || slash == std::string::npos || slash < eq)
        throw std::invalid_argument("--sweep: expected L<a>[-<b>]=<K>/<V>, got '" + tok + "'");
    const auto range = tok.substr(1, eq - 1);
    const auto first = dash < eq ? range.substr(0, dash - 1) : range, last = dash < eq ? range.substr(dash) : range;
    return {to_int("--sweep layer", first, 0), to_int("--sweep layer", last, 0), to_bits("--sweep", tok.substr(eq + 1, slash - eq - 1)),
            to_bits("--sweep", tok.substr(slash + 1))};
}

// ":"-separated levers after a K/V item: c=none|keys|values|both, b=<block>, s=<sinks>, f32, sm|nosm (key smoothing),
// int8|float (the score path), vint8|vfloat (the value sum), L<a>[-<b>]=K/V.
Levers to_levers(const std::string& text) {
    Levers l;
    l.text = text;
    std::size_t at = 0;
    while (at < text.size()) {
        auto colon = text.find(':', at);
        auto tok = text.substr(at, colon == std::string::npos ? std::string::npos : colon - at);
        static const char* const centers[] = {"none", "keys", "values", "both"};
        bool ok = false;
        if (tok == "f32") l.scale_format = 2, ok = true;
        else if (tok == "sm") l.smooth = 2, ok = true;
        else if (tok == "nosm") l.smooth = 1, ok = true;
        else if (tok == "float") l.score = 1, ok = true;
        else if (tok == "int8") l.score = 2, ok = true;
        else if (tok == "vfloat") l.value_sum = 1, ok = true;
        else if (tok == "vint8") l.value_sum = 2, ok = true;
        else if (tok.rfind("L", 0) == 0) l.layers.push_back(to_layer_bits(tok)), ok = true;
        else if (tok.rfind("c=", 0) == 0) {
            for (int i = 0; i < 4; ++i)
                if (tok.substr(2) == centers[i]) l.center = i + 1, ok = true;
        } else if (tok.rfind("b=", 0) == 0 || tok.rfind("s=", 0) == 0) {
            char* end = nullptr;
            long x = std::strtol(tok.c_str() + 2, &end, 10);
            ok = tok.size() > 2 && !*end && x >= -1 && x <= 65536;
            (tok[0] == 'b' ? l.center_block : l.sinks) = static_cast<int>(x == 0 && tok[0] == 's' ? -1 : x);
        }
        if (!ok) throw std::invalid_argument("--sweep: unknown lever '" + tok + "' (c=none|keys|values|both, b=N, s=N, f32, sm, nosm, int8, float, vint8, vfloat, L<a>[-<b>]=K/V)");
        if (colon == std::string::npos) break;
        at = colon + 1;
    }
    return l;
}
const char* const kGgmlTypes = "q8_0, q4_0, q5_0, q5_1 or iq4_nl, each with -norot for no rotation";

std::vector<KvConfig> to_sweep(const std::string& v) {
    std::vector<KvConfig> out;
    std::size_t at = 0;
    while (at <= v.size()) {
        auto comma = v.find(',', at);
        auto item = v.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        auto slash = item.find('/');
        if (auto ggml = parse_ggml_cache(item)) {
            out.push_back(*ggml);
        } else if (slash == std::string::npos) {
            throw std::invalid_argument("--sweep: expected K/V items such as 4/2 or a ggml type (" + std::string(kGgmlTypes) +
                                        "), got '" + item + "'");
        } else {
            auto colon = item.find(':');
            auto value = item.substr(slash + 1, colon == std::string::npos ? std::string::npos : colon - slash - 1);
            KvConfig kv;
            kv.kind = KvKind::turboquant;
            kv.key_bits = to_bits("--sweep", item.substr(0, slash));
            kv.value_bits = to_bits("--sweep", value);
            if (colon != std::string::npos) kv.levers = to_levers(item.substr(colon + 1));
            out.push_back(kv);
        }
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    return out;
}

}  // namespace

std::optional<KvConfig> parse_ggml_cache(std::string_view name) {
    KvConfig kv;
    kv.kind = KvKind::ggml;
    constexpr std::string_view kNoRotation = "-norot";
    if (name.ends_with(kNoRotation)) {
        name.remove_suffix(kNoRotation.size());
        kv.rotate = false;
    }
    auto format = ggml::parse_format(name);
    if (!format) return std::nullopt;
    kv.format = *format;
    return kv;
}

Options parse_options(int argc, char** argv) {
    if (argc < 2) throw std::invalid_argument("no command");
    Options o;
    o.command = argv[1];
    if (o.command != "generate" && o.command != "perplexity" && o.command != "tokenize" && o.command != "logits")
        throw std::invalid_argument("unknown command '" + o.command + "'");
    std::string kv_cache = "fp32";
    bool bits_given = false;
    for (int i = 2; i < argc; ++i) {
        std::string flag = argv[i];
        if (flag == "--ids") {
            o.ids = true;
            continue;
        }
        if (i + 1 >= argc) throw std::invalid_argument(flag + ": missing value");
        std::string v = argv[++i];
        if (flag == "--model") o.model = v;
        else if (flag == "--prompt") o.prompt = v;
        else if (flag == "--prompt-file") o.prompt_file = v;
        else if (flag == "--text") o.text = v;
        else if (flag == "--out") o.out = v;
        else if (flag == "--tokens") o.tokens = to_int(flag, v, 1);
        else if (flag == "--max-prompt") o.max_prompt = to_int(flag, v, 1);
        else if (flag == "--window") o.window = to_int(flag, v, 2);
        else if (flag == "--windows") o.windows = to_int(flag, v, 1);
        else if (flag == "--limit") o.limit = to_int(flag, v, 1);
        else if (flag == "--threads") o.threads = std::min(to_int(flag, v, 1), 256);
        else if (flag == "--seed") o.seed = static_cast<unsigned long long>(to_int(flag, v, 0));
        else if (flag == "--kv-cache") kv_cache = v;
        else if (flag == "--k-bits") o.kv.key_bits = to_bits(flag, v), bits_given = true;
        else if (flag == "--v-bits") o.kv.value_bits = to_bits(flag, v), bits_given = true;
        else if (flag == "--sweep") o.sweep = to_sweep(v);
        else throw std::invalid_argument("unknown option '" + flag + "'");
    }
    if (auto ggml = parse_ggml_cache(kv_cache)) o.kv = *ggml;
    else if (kv_cache == "tq") o.kv.kind = KvKind::turboquant;
    else if (kv_cache.find('/') != std::string::npos && kv_cache.find(',') == std::string::npos) o.kv = to_sweep(kv_cache).front();
    else if (kv_cache != "fp32")
        throw std::invalid_argument("--kv-cache: expected fp32, tq, K/V[:levers], " + std::string(kGgmlTypes) + "; got '" + kv_cache + "'");
    if (bits_given && kv_cache != "tq") throw std::invalid_argument("--k-bits/--v-bits need --kv-cache tq");
    if (o.model.empty()) throw std::invalid_argument("--model is required");
    if (o.command == "generate" && o.prompt.empty() == o.prompt_file.empty())
        throw std::invalid_argument("generate: give one of --prompt and --prompt-file");
    if ((o.command == "perplexity" || o.command == "tokenize") && o.text.empty())
        throw std::invalid_argument(o.command + ": --text is required");
    if (o.command == "logits" && (o.prompt.empty() || o.out.empty())) throw std::invalid_argument("logits: --prompt and --out are required");
    if (!o.sweep.empty() && o.command != "perplexity") throw std::invalid_argument("--sweep is for perplexity");
    if (!o.sweep.empty() && o.kv.kind != KvKind::fp32) throw std::invalid_argument("--sweep runs FP32 and its configs; drop --kv-cache");
    if (o.threads == 0) o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return o;
}

}  // namespace llama

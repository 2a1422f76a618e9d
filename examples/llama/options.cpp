#include "options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace llama {

const char* const kUsage = R"(tq-llama: a llama and Gemma 3 engine whose KV cache is FP32 or TurboQuant.

usage: tq-llama <command> --model FILE.gguf [options]
commands:
  generate    greedy continuation of --prompt TEXT or --prompt-file FILE
              [--tokens 64] [--max-prompt N] [--ids]
  perplexity  perplexity of --text FILE in windows [--window 512] [--windows N]
              [--sweep K/V,K/V,...: FP32 and each TurboQuant config side by side,
               with mean KL divergence and top-1 agreement against FP32]
  tokenize    print the token ids of --text FILE [--limit N]
  logits      write the next-token logits after --prompt to --out FILE (raw float32)
options:
  --kv-cache fp32|tq   the KV cache (default fp32); tq takes --k-bits B --v-bits B
                       (default 4 and 2; whole or in steps of 1/8, as compiled in)
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

std::vector<KvConfig> to_sweep(const std::string& v) {
    std::vector<KvConfig> out;
    std::size_t at = 0;
    while (at <= v.size()) {
        auto comma = v.find(',', at);
        auto item = v.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        auto slash = item.find('/');
        if (slash == std::string::npos) throw std::invalid_argument("--sweep: expected K/V items such as 4/2, got '" + item + "'");
        out.push_back({true, to_bits("--sweep", item.substr(0, slash)), to_bits("--sweep", item.substr(slash + 1))});
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    return out;
}

}  // namespace

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
    if (kv_cache != "fp32" && kv_cache != "tq") throw std::invalid_argument("--kv-cache: expected fp32 or tq, got '" + kv_cache + "'");
    o.kv.turboquant = kv_cache == "tq";
    if (bits_given && !o.kv.turboquant) throw std::invalid_argument("--k-bits/--v-bits need --kv-cache tq");
    if (o.model.empty()) throw std::invalid_argument("--model is required");
    if (o.command == "generate" && o.prompt.empty() == o.prompt_file.empty())
        throw std::invalid_argument("generate: give one of --prompt and --prompt-file");
    if ((o.command == "perplexity" || o.command == "tokenize") && o.text.empty())
        throw std::invalid_argument(o.command + ": --text is required");
    if (o.command == "logits" && (o.prompt.empty() || o.out.empty())) throw std::invalid_argument("logits: --prompt and --out are required");
    if (!o.sweep.empty() && o.command != "perplexity") throw std::invalid_argument("--sweep is for perplexity");
    if (!o.sweep.empty() && o.kv.turboquant) throw std::invalid_argument("--sweep runs FP32 and its configs; drop --kv-cache");
    if (o.threads == 0) o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return o;
}

}  // namespace llama

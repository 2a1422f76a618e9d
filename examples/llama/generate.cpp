// tq-llama generate: greedy decoding, with prefill and decode speeds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "engine.hpp"

namespace llama {

int generate(const Options& o) {
    Engine e(o);
    auto prompt = e.tokenizer.encode(o.prompt_file.empty() ? o.prompt : read_file(o.prompt_file));
    if (o.max_prompt > 0 && static_cast<int>(prompt.size()) > o.max_prompt) prompt.resize(static_cast<std::size_t>(o.max_prompt));
    if (prompt.empty()) throw std::invalid_argument("generate: the prompt has no tokens");
    int positions = static_cast<int>(prompt.size()) + o.tokens;
    auto cache = make_cache(e.model, o.kv, positions, o.seed, &e.pool);
    int vocab = e.model.config().vocab;
    auto argmax = [&](const std::vector<float>& row) {
        return static_cast<std::int32_t>(std::max_element(row.begin(), row.begin() + vocab) - row.begin());
    };

    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    std::vector<std::int32_t> out{argmax(e.model.forward(e.pool, prompt, 0, *cache, 1))};
    auto t1 = clock::now();
    while (static_cast<int>(out.size()) < o.tokens && out.back() != e.tokenizer.eos()) {
        int pos = static_cast<int>(prompt.size() + out.size()) - 1;
        out.push_back(argmax(e.model.forward(e.pool, {&out.back(), 1}, pos, *cache, 1)));
    }
    auto t2 = clock::now();

    std::string text;
    for (auto t : out) text += e.tokenizer.decode(t);
    std::printf("%s\n", text.c_str());
    if (o.ids) {
        std::printf("ids:");
        for (auto t : out) std::printf(" %d", t);
        std::printf("\n");
    }
    double prefill = std::chrono::duration<double>(t1 - t0).count(), decode = std::chrono::duration<double>(t2 - t1).count();
    std::printf("kv cache: %s, %.0f bytes per token all in (%.1f KiB for %d positions)\n", cache->name().c_str(),
                cache->bytes_per_token_all_in(), cache->bytes_per_token_all_in() * positions / 1024, positions);
    std::printf("prefill: %zu tokens, %.1f tokens/s\n", prompt.size(), static_cast<double>(prompt.size()) / prefill);
    if (out.size() > 1)
        std::printf("decode: %zu tokens at context %zu..%zu, %.2f tokens/s\n", out.size() - 1, prompt.size(),
                    prompt.size() + out.size() - 1, static_cast<double>(out.size() - 1) / decode);
    return 0;
}

}  // namespace llama

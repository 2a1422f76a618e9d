// tq-llama: a small inference engine for llama and Gemma 3 models that embeds TurboQuant's
// generated kernels (examples/llama/README.md).
#include <cstdio>
#include <exception>
#include <fstream>
#include <stdexcept>

#include "engine.hpp"

namespace llama {
namespace {

int tokenize(const Options& o) {
    GgufFile file(o.model);
    auto ids = Tokenizer(file).encode(read_file(o.text));
    if (o.limit > 0 && static_cast<int>(ids.size()) > o.limit) ids.resize(static_cast<std::size_t>(o.limit));
    for (std::size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
    return 0;
}

int logits(const Options& o) {
    Engine e(o);
    auto prompt = e.tokenizer.encode(o.prompt);
    if (prompt.empty()) throw std::invalid_argument("logits: the prompt has no tokens");
    auto cache = make_cache(e.model, o.kv, static_cast<int>(prompt.size()), o.seed, &e.pool);
    auto row = e.model.forward(e.pool, prompt, 0, *cache, 1);
    std::ofstream out(o.out, std::ios::binary);
    out.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size() * sizeof(float)));
    if (!out) throw std::runtime_error(o.out + ": cannot write");
    std::printf("tokens:");
    for (auto t : prompt) std::printf(" %d", t);
    std::printf("\n");
    return 0;
}

}  // namespace
}  // namespace llama

int main(int argc, char** argv) {
    llama::Options o;
    try {
        o = llama::parse_options(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tq-llama: %s\n\n%s", e.what(), llama::kUsage);
        return 2;
    }
    try {
        if (o.command == "generate") return llama::generate(o);
        if (o.command == "perplexity") return llama::perplexity(o);
        if (o.command == "tokenize") return llama::tokenize(o);
        return llama::logits(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tq-llama: %s\n", e.what());
        return 1;
    }
}

// What every command loads: the model, its tokenizer, the thread pool; and the KV cache a config asks for.
#pragma once

#include <memory>
#include <string>

#include "gguf.hpp"
#include "model.hpp"
#include "options.hpp"
#include "thread_pool.hpp"
#include "tokenizer.hpp"

namespace llama {

struct Engine {
    explicit Engine(const Options& o) : file(o.model), model(file), tokenizer(file), pool(o.threads) {}
    GgufFile file;
    Model model;
    Tokenizer tokenizer;
    ThreadPool pool;
};

// pool: the engine's threads, which a TurboQuant cache's attention also runs on (nullptr: one thread).
std::unique_ptr<KvCache> make_cache(const Model& model, const KvConfig& kv, int max_positions, unsigned long long seed,
                                    ThreadPool* pool);
std::string read_file(const std::string& path);  // throws if unreadable

int generate(const Options& o);
int perplexity(const Options& o);

}  // namespace llama

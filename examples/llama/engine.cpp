#include "engine.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace llama {

std::unique_ptr<KvCache> make_cache(const Model& model, const KvConfig& kv, int max_positions, unsigned long long seed,
                                    ThreadPool* pool) {
    if (max_positions > model.config().context)
        throw std::invalid_argument(std::to_string(max_positions) + " positions exceed the model's context of " +
                                    std::to_string(model.config().context));
    auto shape = model.cache_shape(max_positions);
    switch (kv.kind) {
    case KvKind::turboquant: return std::make_unique<TurboQuantCache>(shape, kv, seed, pool);
    case KvKind::ggml: return std::make_unique<GgmlCache>(shape, kv.format, kv.rotate);
    case KvKind::fp32: break;
    }
    return std::make_unique<Fp32Cache>(shape);
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace llama

// fa_tq_cache_set_threads / fa_tq_cache_set_parallel_for: attention's executor.
#include "fa_tq_checks.hpp"
#include "last_error.hpp"

#include <string>
#include <system_error>

using namespace tq::detail;

extern "C" {

int fa_tq_cache_set_threads(fa_tq_cache* cache, int n_threads) {
    constexpr const char* fn = "fa_tq_cache_set_threads";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_not_null(fn, cache, "cache")) return rc;
        if (n_threads < 1 || n_threads > FA_TQ_MAX_THREADS)
            return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": n_threads must be in [1, " +
                                                       std::to_string(FA_TQ_MAX_THREADS) + "], got " +
                                                       std::to_string(n_threads));
        if (cache->pool && cache->pool->threads() == n_threads) return FA_TQ_OK;
        std::unique_ptr<ThreadPool> pool;
        if (n_threads > 1) {
            try {
                pool = std::make_unique<ThreadPool>(n_threads);
            } catch (const std::system_error& e) {
                return fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": cannot start " + std::to_string(n_threads - 1) +
                                                        " threads: " + e.what());
            }
        }
        cache->pool = std::move(pool);  // the old pool, if any, stops here
        cache->parallel_for = nullptr;
        cache->parallel_ctx = nullptr;
        return FA_TQ_OK;
    });
}

int fa_tq_cache_set_parallel_for(fa_tq_cache* cache, fa_tq_parallel_for parallel_for, void* ctx) {
    constexpr const char* fn = "fa_tq_cache_set_parallel_for";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_not_null(fn, cache, "cache")) return rc;
        cache->pool.reset();
        cache->parallel_for = parallel_for;
        cache->parallel_ctx = parallel_for ? ctx : nullptr;
        return FA_TQ_OK;
    });
}

}  // extern "C"

// The library's parallel-for on llama.cpp's own compute threads.
//
// ggml calls a custom op on every thread of the graph's compute (ith in [0, nth)),
// with a barrier after each node.  In the tq attention op, thread 0 makes the
// library calls and the others join this team while thread 0 is in the node: each
// fa_tq_parallel_for call posts a job whose task indices any member takes, and
// thread 0 takes them too, so a job finishes even if no helper ever arrives.  No
// second pool, no oversubscription, and the cache's bytes do not depend on nth
// (the library's split depends on the positions only).  Thread 0 never waits for a
// helper to arrive: a helper that comes after thread 0 closed the node just leaves.
#pragma once

#include <atomic>
#include <cstdint>

class llama_tq_team {
public:
    // fa_tq_parallel_for (turboquant.h): ctx is the team.
    static void parallel_for(void * ctx, int n_tasks, void (*task)(void *, int), void * task_arg);

    // Before each graph compute (the memory's apply, on the calling thread): a new
    // epoch, so that (epoch, layer) names each op node of the compute exactly.
    void next_compute() { epoch.fetch_add(1, std::memory_order_relaxed); }

    // Thread 0 of layer il's node: run `body` (which may call parallel_for), then
    // close the node, even if body throws.  serial: body's tasks run on thread 0 alone
    // (tasks too small to be worth handing to another core).
    template <typename F> void lead(int il, bool serial, F && body) {
        struct closer {
            llama_tq_team * team;
            uint64_t key;
            ~closer() { team->closed.store(key, std::memory_order_release); }
        } close{this, key(il)};
        serial_tasks = serial;
        body();
    }
    // Threads 1 .. nth-1 of layer il's node: take tasks until thread 0 closes it (at
    // once if it already has).
    void help(int il);

private:
    void run_tasks(uint32_t gen);  // takes indices of job `gen` until none is left
    uint64_t key(int il) const { return epoch.load(std::memory_order_relaxed) << 16 | uint64_t(il); }

    bool serial_tasks = false;  // thread 0's own: parallel_for runs inline
    std::atomic<uint64_t> epoch{0};
    std::atomic<uint64_t> closed{~uint64_t(0)};  // the key of the node thread 0 closed last
    // The current job: its generation, task count and next index in one word, so that
    // a late helper can never take an index of a newer job for an older one's task
    // (the task and its argument are written only once every index of the previous
    // job is taken).
    static constexpr int k_index_bits = 20;  // up to 2^20 - 1 tasks per job
    std::atomic<uint64_t> ticket{0};        // generation << 40 | n_tasks << 20 | next index
    std::atomic<int> done{0};
    std::atomic<void (*)(void *, int)> task{nullptr};
    std::atomic<void *> task_arg{nullptr};
    std::atomic<uint32_t> published{0};  // the generation whose task and argument are set
};

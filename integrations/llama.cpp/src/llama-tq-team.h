// The library's parallel-for on llama.cpp's own compute threads.
//
// ggml calls a custom op on every thread of the graph's compute (ith in [0, nth)),
// with a barrier after each node.  In the tq attention op, thread 0 makes the
// library calls and the others join this team while thread 0 is in the node: each
// fa_tq_parallel_for call posts a job whose task indices any member takes, and
// thread 0 takes them too, so a job finishes even if no helper ever arrives.  No
// second pool, no oversubscription, and the cache's bytes do not depend on nth
// (the library's split depends on the positions only).  Thread 0 never waits for a
// helper to arrive: a helper that comes late, or cannot tell, just leaves.
#pragma once

#include <atomic>
#include <cstdint>

class llama_tq_team {
public:
    // fa_tq_parallel_for (turboquant.h): ctx is the team.
    static void parallel_for(void * ctx, int n_tasks, void (*task)(void *, int), void * task_arg);

    // Thread 0 of a node: run `body` (which may call parallel_for), then close the node.
    template <typename F> void lead(F && body) {
        body();
        closed.fetch_add(1, std::memory_order_acq_rel);
    }
    // Threads 1 .. nth-1 of the node: take tasks until thread 0 closes it.
    void help();

private:
    void run_tasks(uint32_t gen);  // takes indices of job `gen` until none is left

    // Nodes thread 0 has closed.  A helper that last saw `closed` equal r when it left
    // its previous node, and sees r again on entering this one, knows thread 0 has not
    // closed this one (ggml's barrier keeps thread 0 from going further); any other
    // value, and it leaves at once (it missed nodes, or thread 0 is done).
    std::atomic<uint64_t> closed{0};
    const uint64_t id = next_id.fetch_add(1);  // which team a helper's record is of (addresses recur)
    static inline std::atomic<uint64_t> next_id{1};
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

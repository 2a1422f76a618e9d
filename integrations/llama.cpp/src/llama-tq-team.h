// The library's parallel-for on llama.cpp's own compute threads.
//
// ggml calls a custom op on every thread of the graph's compute (ith in [0, nth)),
// with a barrier after each node.  In the tq attention op, thread 0 makes the
// library calls and the others join this team until thread 0 closes the node:
// each fa_tq_parallel_for call posts a job whose task indices any member takes, and
// thread 0 takes them too, so a job finishes even if no helper ever arrives.  No
// second pool, no oversubscription, and the cache's bytes do not depend on nth
// (the library's split depends on the positions only).
#pragma once

#include <atomic>
#include <cstdint>

class llama_tq_team {
public:
    // fa_tq_parallel_for (turboquant.h): ctx is the team.
    static void parallel_for(void * ctx, int n_tasks, void (*task)(void *, int), void * task_arg);

    // Thread 0 of a node: run `body` (which may call parallel_for), then release the
    // helpers once all nth - 1 of them have arrived.
    template <typename F> void lead(int nth, F && body) {
        body();
        close(nth);
    }
    // Threads 1 .. nth-1 of the node: take tasks until thread 0 closes it.
    void help();

private:
    void close(int nth);
    void run_tasks(uint32_t gen);  // takes indices of job `gen` until none is left

    // The node: every thread reads it on entry; thread 0 bumps it once all have arrived.
    std::atomic<uint64_t> node{0};
    std::atomic<int> arrived{0};
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

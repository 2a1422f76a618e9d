#include "llama-tq-team.h"

#include <thread>

namespace {

// Spin, then yield: the waits are short (one library call's tasks), and a yield can
// hand the core to another process for a whole time slice.
struct backoff {
    int n = 0;
    void pause() {
        if (++n > (1 << 14)) {
            std::this_thread::yield();
        } else {
            cpu_relax();
        }
    }
    static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
    }
};

}  // namespace

void llama_tq_team::run_tasks(uint32_t gen) {
    constexpr uint64_t mask = (uint64_t(1) << k_index_bits) - 1;
    void (*fn)(void *, int) = task.load(std::memory_order_acquire);
    void * arg = task_arg.load(std::memory_order_acquire);
    uint64_t t = ticket.load(std::memory_order_acquire);
    // Take index i of job `gen` only while the ticket still names that job: then fn and
    // arg, read before, are that job's.
    while (uint32_t(t >> (2 * k_index_bits)) == gen && (t & mask) < ((t >> k_index_bits) & mask)) {
        if (ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) {
            fn(arg, int(t & mask));
            done.fetch_add(1, std::memory_order_acq_rel);
            t = ticket.load(std::memory_order_acquire);
        }
    }
}

void llama_tq_team::parallel_for(void * ctx, int n_tasks, void (*task)(void *, int), void * task_arg) {
    auto * team = static_cast<llama_tq_team *>(ctx);
    if (team->serial_tasks || n_tasks >= (1 << k_index_bits)) {  // inline (or more than a ticket counts)
        for (int i = 0; i < n_tasks; ++i) {
            task(task_arg, i);
        }
        return;
    }
    const uint32_t gen = (team->published.load(std::memory_order_relaxed) + 1) & 0xffffffu;
    team->task.store(task, std::memory_order_relaxed);
    team->task_arg.store(task_arg, std::memory_order_relaxed);
    team->done.store(0, std::memory_order_relaxed);
    team->ticket.store(uint64_t(gen) << (2 * k_index_bits) | uint64_t(n_tasks) << k_index_bits,
                       std::memory_order_release);
    team->published.store(gen, std::memory_order_release);
    team->run_tasks(gen);
    backoff b;
    while (team->done.load(std::memory_order_acquire) < n_tasks) {
        b.pause();
    }
}

void llama_tq_team::help(int il) {
    // ggml's barrier keeps every thread in this node until all leave it, so thread 0
    // has closed either this node (closed == key) or an earlier one.
    const uint64_t mine = key(il);
    uint32_t seen = published.load(std::memory_order_acquire);
    run_tasks(seen);  // a job posted before this thread arrived (a finished one yields nothing)
    backoff b;
    while (closed.load(std::memory_order_acquire) != mine) {
        const uint32_t gen = published.load(std::memory_order_acquire);
        if (gen != seen) {
            seen = gen;
            run_tasks(gen);
            b = backoff{};
        } else {
            b.pause();
        }
    }
}

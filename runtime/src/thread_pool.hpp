// The cache's built-in thread pool (fa_tq_cache_set_threads): n - 1 workers and
// the calling thread share the tasks of one call.  Thread k first takes, in order,
// the k-th of n contiguous ranges of task indices (consecutive tasks read
// consecutive memory, which the hardware prefetcher streams: 1.4x -> 1.55x on two
// cores at 16k positions), then takes what is left of the others' ranges.  Workers
// and the caller spin for up to 100 us before they sleep.  One call at a time: a
// call that finds the pool busy (another layer attending on another thread, as the
// header allows) runs its tasks on its own thread, so concurrent calls stay correct
// and never wait on each other.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace tq::detail {

class ThreadPool {
public:
    using Task = void (*)(void* arg, int index);

    explicit ThreadPool(int n_threads);  // starts n_threads - 1 workers; throws std::system_error
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int threads() const { return int(workers_.size()) + 1; }
    // task(arg, i) for every i in [0, n_tasks), in any order, on any of the threads;
    // returns when all are done.  Tasks must not throw.
    void run(int n_tasks, Task task, void* arg);

private:
    void work(int k);
    void drain(int k);
    void stop();

    std::mutex busy_;  // held by the call using the workers
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::vector<std::thread> workers_;
    // The current job, written under mutex_ before generation_ moves on.
    Task task_ = nullptr;
    void* arg_ = nullptr;
    // Thread k's range of task indices: the next one to take, and its end.
    struct alignas(64) Range {
        std::atomic<int> next{0};
        int end = 0;
    };
    std::vector<Range> ranges_;  // one per thread, the caller's first
    std::atomic<int> running_{0};  // workers not yet done with the current job
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<bool> stop_{false};
};

}  // namespace tq::detail

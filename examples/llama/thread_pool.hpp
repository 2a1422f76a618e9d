// A fixed set of worker threads that run one parallel loop at a time.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace llama {

class ThreadPool {
public:
    explicit ThreadPool(int threads);  // threads >= 1, the caller included
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return static_cast<int>(workers_.size()) + 1; }
    // Runs task(i) for i in [0, size()) on every thread, the caller running i = 0; returns when all are done.
    void run(const std::function<void(int)>& task);
    // TurboQuant's fa_tq_parallel_for on this pool (pool: a ThreadPool*): task(arg, i)
    // for every i < n_tasks, strided over the threads.  Like run, one caller at a
    // time: tq-llama attends its layers one after another.
    static void parallel_for(void* pool, int n_tasks, void (*task)(void* arg, int index), void* arg);

private:
    void work(int index);

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable start_, done_;
    const std::function<void(int)>* task_ = nullptr;
    unsigned long generation_ = 0;
    int pending_ = 0;
    bool stop_ = false;
};

}  // namespace llama

#include "thread_pool.hpp"

namespace tq::detail {

ThreadPool::ThreadPool(int n_threads) {
    try {
        for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this] { work(); });
    } catch (...) {
        stop();  // join the workers already started
        throw;
    }
}

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
}

void ThreadPool::drain() {
    for (int i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < n_tasks_;) task_(arg_, i);
}

void ThreadPool::run(int n_tasks, Task task, void* arg) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy || workers_.empty() || n_tasks <= 1) {
        for (int i = 0; i < n_tasks; ++i) task(arg, i);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        task_ = task;
        arg_ = arg;
        n_tasks_ = n_tasks;
        next_.store(0, std::memory_order_relaxed);
        running_ = int(workers_.size());
        ++generation_;
    }
    wake_.notify_all();
    drain();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return running_ == 0; });
}

void ThreadPool::work() {
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        lock.unlock();
        drain();
        lock.lock();
        if (--running_ == 0) done_.notify_one();
    }
}

}  // namespace tq::detail

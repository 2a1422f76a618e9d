#include "thread_pool.hpp"

namespace llama {

ThreadPool::ThreadPool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    start_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::run(const std::function<void(int)>& task) {
    {
        std::lock_guard lock(mutex_);
        task_ = &task;
        pending_ = static_cast<int>(workers_.size());
        ++generation_;
    }
    start_.notify_all();
    task(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
}

void ThreadPool::parallel_for(void* pool, int n_tasks, void (*task)(void* arg, int index), void* arg) {
    auto& p = *static_cast<ThreadPool*>(pool);
    const int threads = p.size();
    p.run([&](int thread) {
        for (int i = thread; i < n_tasks; i += threads) task(arg, i);
    });
}

void ThreadPool::work(int index) {
    unsigned long seen = 0;
    for (;;) {
        const std::function<void(int)>* task;
        {
            std::unique_lock lock(mutex_);
            start_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            task = task_;
        }
        (*task)(index);
        std::lock_guard lock(mutex_);
        if (--pending_ == 0) done_.notify_one();
    }
}

}  // namespace llama

#include "thread_pool.hpp"

#include <chrono>

namespace tq::detail {

ThreadPool::ThreadPool(int n_threads) : ranges_(std::size_t(n_threads)) {
    try {
        for (int k = 1; k < n_threads; ++k) workers_.emplace_back([this, k] { work(k); });
    } catch (...) {
        stop();  // join the workers already started
        throw;
    }
}

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_.store(true, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
}

void ThreadPool::drain(int k) {
    const std::size_t n = ranges_.size();
    for (std::size_t r = 0; r < n; ++r) {  // its own range, then the others'
        Range& range = ranges_[(std::size_t(k) + r) % n];
        for (int i; (i = range.next.fetch_add(1, std::memory_order_relaxed)) < range.end;) task_(arg_, i);
    }
}

namespace {

// Waiting first spins for a short while: waking a sleeping thread (above all a
// virtual CPU) costs tens of microseconds, as much as a whole task of a call at a
// few thousand positions, and calls come back to back (layer after layer).
template <class Ready>
bool spin_until(Ready ready) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
    for (int i = 1;; ++i) {
        if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#else
        std::this_thread::yield();
#endif
        if (i % 64 == 0 && std::chrono::steady_clock::now() > until) return false;
    }
}

}  // namespace

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
        const long n = long(ranges_.size());
        for (long k = 0; k < n; ++k) {
            ranges_[std::size_t(k)].next.store(int(n_tasks * k / n), std::memory_order_relaxed);
            ranges_[std::size_t(k)].end = int(n_tasks * (k + 1) / n);
        }
        running_.store(int(workers_.size()), std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_release);  // publishes the job
    }
    wake_.notify_all();
    drain(0);
    auto done = [this] { return running_.load(std::memory_order_acquire) == 0; };
    if (spin_until(done)) return;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, done);
}

void ThreadPool::work(int k) {
    std::uint64_t seen = 0;
    for (;;) {
        auto ready = [&] {
            return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
        };
        if (!spin_until(ready)) {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, ready);
        }
        if (stop_.load(std::memory_order_acquire)) return;
        seen = generation_.load(std::memory_order_acquire);
        drain(k);
        if (running_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard<std::mutex> lock(mutex_);  // the caller checks `done` under it, then sleeps
            done_.notify_one();
        }
    }
}

}  // namespace tq::detail

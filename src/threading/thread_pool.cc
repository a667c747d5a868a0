#include "threading/thread_pool.h"

#include <stdexcept>
#include <string>

#if SA_HAVE_THREADS
#include <map>
#endif

namespace simd_attention {

size_t ThreadPool::HardwareThreads() {
#if SA_HAVE_THREADS
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
#else
  return 1;
#endif
}

ThreadPool::ThreadPool(size_t threads, double min_parallel_ns, double min_task_ns)
    : min_parallel_ns_(min_parallel_ns), min_task_ns_(min_task_ns) {
  if (threads == 0) {
    throw std::invalid_argument("threads: expected at least 1, got 0");
  }
#if SA_HAVE_THREADS
  workers_.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) workers_.emplace_back([this, t] { WorkerLoop(t); });
#else
  if (threads > 1) {
    throw std::invalid_argument("threads: this build runs on one thread (it was compiled "
                                "without threads), got " + std::to_string(threads));
  }
#endif
}

#if SA_HAVE_THREADS
ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::Work(size_t thread) {
  for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < count_;
       i = next_.fetch_add(1, std::memory_order_relaxed)) {
    call_(task_, i, thread);
  }
}

void ThreadPool::RunErased(size_t count, Erased call, const void* task) {
  std::lock_guard<std::mutex> run(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    call_ = call;
    task_ = task;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    busy_ = workers_.size();
    ++generation_;
  }
  wake_.notify_all();
  Work(0);
  // The job's fields stay valid until every worker has left it.
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [this] { return busy_ == 0; });
}

void ThreadPool::WorkerLoop(size_t thread) {
  size_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    Work(thread);
    bool last;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      last = --busy_ == 0;
    }
    if (last) finished_.notify_one();
  }
}

#else
ThreadPool::~ThreadPool() = default;
#endif

std::shared_ptr<ThreadPool> SharedThreadPool(size_t threads) {
  if (threads == 0) threads = ThreadPool::HardwareThreads();
#if !SA_HAVE_THREADS
  if (threads > 1) ThreadPool refused(threads);  // throws the constructor's error
  static const std::shared_ptr<ThreadPool> single = std::make_shared<ThreadPool>(1);
  return single;
#else
  static std::mutex mutex;
  static std::map<size_t, std::weak_ptr<ThreadPool>> pools;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<ThreadPool> pool = pools[threads].lock();
  if (!pool) {
    pool = std::make_shared<ThreadPool>(threads);
    pools[threads] = pool;
  }
  return pool;
#endif
}

}  // namespace simd_attention

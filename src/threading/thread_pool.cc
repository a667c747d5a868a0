#include "simd_attention/thread_pool.h"

#include <stdexcept>
#include <string>

#if SA_HAVE_THREADS
#include <map>
#endif

namespace simd_attention {

#if defined(__EMSCRIPTEN_PTHREADS__)
namespace {
std::atomic<size_t> wasm_threads{0};  // 0: no limit (see SetWasmThreads)
}  // namespace

void SetWasmThreads(size_t threads) { wasm_threads.store(threads); }
#endif

size_t ThreadPool::HardwareThreads() {
#if defined(__EMSCRIPTEN_PTHREADS__)
  if (const size_t n = wasm_threads.load(); n != 0) return n;
#endif
#if SA_HAVE_THREADS
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
#else
  return 1;
#endif
}

ThreadPool::ThreadPool(size_t threads, double min_parallel_ns, double min_task_ns, Start start)
    : min_parallel_ns_(min_parallel_ns), min_task_ns_(min_task_ns) {
  if (threads == 0) {
    throw std::invalid_argument("threads: expected at least 1, got 0");
  }
#if defined(__EMSCRIPTEN_PTHREADS__)
  if (const size_t n = wasm_threads.load(); n != 0 && threads != 1 && threads != n) {
    throw std::invalid_argument(
        "threads: this wasm module runs " + std::to_string(n) + " thread" +
        (n == 1 ? "" : "s") + " (its workers are started with it), so an object runs on " +
        (n == 1 ? std::string("1") : "1 or " + std::to_string(n)) + ", got " +
        std::to_string(threads));
  }
#endif
#if SA_HAVE_THREADS
  threads_ = threads;
  workers_.reserve(threads - 1);  // never moved: StartThread may run beside a job
  if (start == Start::kLater) return;
  while (StartThread() < threads) {
  }
#else
  (void)start;
  if (threads > 1) {
    throw std::invalid_argument("threads: this build runs on one thread (it was compiled "
                                "without threads), got " + std::to_string(threads));
  }
#endif
}

size_t ThreadPool::StartThread() {
#if SA_HAVE_THREADS
  std::lock_guard<thread_sync::Mutex> one_at_a_time(start_mutex_);
  if (workers_.size() + 1 < threads_) {
    const size_t t = workers_.size() + 1;
    workers_.emplace_back([this, t] { WorkerLoop(t); });
    // The next loop then takes it: it runs (in wasm, on a worker that has
    // loaded, it starts without this thread's event loop).
    std::lock_guard<thread_sync::Mutex> lock(mutex_);
    all_running_.Wait(mutex_, [this] { return running_ == workers_.size(); });
  }
  return workers_.size() + 1;
#else
  return 1;
#endif
}

#if SA_HAVE_THREADS
ThreadPool::~ThreadPool() {
  {
    std::lock_guard<thread_sync::Mutex> lock(mutex_);
    stop_.store(true, std::memory_order_release);
  }
  wake_.NotifyAll();
  for (thread_sync::Thread& w : workers_) w.join();
}

void ThreadPool::Work(size_t thread) {
  for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < count_;
       i = next_.fetch_add(1, std::memory_order_relaxed)) {
    call_(task_, i, thread);
  }
}

namespace {

// A forward runs several short loops back to back (projections, attention,
// output projection): waiting threads first spin this many rounds, about
// 20-50 us, before they sleep, so that the next loop finds them awake
// instead of paying a futex wake-up (5-20 us in a VM) per thread.
constexpr int kSpinRounds = 4000;

inline void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpinRounds have passed; returns done().
// Every 256 rounds it yields, so that with more threads than cores (7 on
// this 2-core machine in the tests) a spinning thread lets a working one run.
template <class Done>
bool SpinUntil(const Done& done) {
  for (int i = 1; i <= kSpinRounds; ++i) {
    if (done()) return true;
    if (i % 256 == 0) {
      std::this_thread::yield();
    } else {
      Pause();
    }
  }
  return done();
}

}  // namespace

void ThreadPool::RunErased(size_t count, Erased call, const void* task) {
  std::lock_guard<thread_sync::Mutex> run(run_mutex_);
  call_ = call;
  task_ = task;
  count_ = count;
  next_.store(0, std::memory_order_relaxed);
  {
    // Under the mutex, so that a worker between its check and its sleep
    // cannot miss the notification, and so that the job waits for exactly
    // the workers running now: one that starts later reads generation_
    // under this mutex as it starts, and so waits for the next job.
    std::lock_guard<thread_sync::Mutex> lock(mutex_);
    busy_.store(running_, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.NotifyAll();
  Work(0);
  // The job's fields stay valid until every worker has left it.
  auto finished = [this] { return busy_.load(std::memory_order_acquire) == 0; };
  if (SpinUntil(finished)) return;
  std::lock_guard<thread_sync::Mutex> lock(mutex_);
  finished_.Wait(mutex_, finished);
}

void ThreadPool::WorkerLoop(size_t thread) {
  size_t seen;
  {
    std::lock_guard<thread_sync::Mutex> lock(mutex_);
    seen = generation_.load(std::memory_order_relaxed);
    ++running_;
  }
  all_running_.NotifyAll();
  for (;;) {
    auto woken = [&] {
      return stop_.load(std::memory_order_acquire) ||
             generation_.load(std::memory_order_acquire) != seen;
    };
    if (!SpinUntil(woken)) {
      std::lock_guard<thread_sync::Mutex> lock(mutex_);
      wake_.Wait(mutex_, woken);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    Work(thread);
    if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<thread_sync::Mutex> lock(mutex_);  // the caller checks under it
      finished_.NotifyOne();
    }
  }
}

#else
ThreadPool::~ThreadPool() = default;

namespace {
// The one pool of a build without threads, made when the module starts, so
// that creating the first object allocates nothing that outlives it.
const std::shared_ptr<ThreadPool> kSinglePool = std::make_shared<ThreadPool>(1);
}  // namespace
#endif

std::shared_ptr<ThreadPool> SharedThreadPool(size_t threads, ThreadPool::Start start) {
  if (threads == 0) threads = ThreadPool::HardwareThreads();
#if !SA_HAVE_THREADS
  if (threads > 1) ThreadPool refused(threads);  // throws the constructor's error
  (void)start;
  return kSinglePool;
#else
  static thread_sync::Mutex mutex;
  static std::map<size_t, std::weak_ptr<ThreadPool>> pools;
  std::lock_guard<thread_sync::Mutex> lock(mutex);
  std::shared_ptr<ThreadPool> pool = pools[threads].lock();
  if (!pool) {
    pool = std::make_shared<ThreadPool>(threads, kMinParallelNs, kMinTaskNs, start);
    pools[threads] = pool;
  }
  return pool;
#endif
}

}  // namespace simd_attention

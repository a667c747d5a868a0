// A fixed pool of threads that runs one parallel loop at a time.
//
// Why our own: Highway 1.0.3 has no contrib/thread_pool, and the loops here
// are few and coarse (GEMM tiles, attention work items, LayerNorm rows), so
// a counter that hands out indices and two condition variables suffice. The
// calling thread takes part as thread 0, so a pool of 1 has no other thread
// and Run is a plain loop. Work is handed out dynamically (the next index to
// whoever is free), which balances uneven items such as causal query blocks.
//
// Results never depend on the thread count: callers split work so that each
// output element is computed by exactly one item, in the same order as a
// single thread would (see the cost models where Run is called). Nor on
// which threads take part: a loop is split for threads() and runs on those
// that are running when it starts (the caller at least), which is what lets
// a threaded wasm module's threads join as their Web Workers load.
#pragma once

#include <cstddef>
#include <memory>

// Whether this build has threads: natively yes; in wasm only with -pthread
// (a wasm build without it has neither workers nor their code).
#if !defined(__EMSCRIPTEN__) || defined(__EMSCRIPTEN_PTHREADS__)
#define SA_HAVE_THREADS 1
#include <atomic>
#include <vector>

#include "simd_attention/thread_sync.h"

#else
#define SA_HAVE_THREADS 0
#endif

namespace simd_attention {

// Below this estimated single-thread time a loop runs on the calling thread
// alone: waking the workers and waiting for the last one costs 5-20 us.
constexpr double kMinParallelNs = 30000;
// Each task should run at least this long, so that hand-out and wake-up
// costs stay under ~10% of it.
constexpr double kMinTaskNs = 8000;

class ThreadPool {
 public:
  // When the threads beyond the caller start: in the constructor (kNow); or
  // one by one, each when StartThread() is called (kLater): a threaded wasm
  // module starts one as each of its Web Workers has loaded, after the
  // module is already in use.
  enum class Start { kNow, kLater };

  // `threads` >= 1 in total, the caller included. Throws
  // std::invalid_argument for 0 or, in a wasm build without threads, > 1.
  // The two thresholds feed the cost models (threading/parallel.h); tests
  // pass 0 to split even the smallest loop.
  explicit ThreadPool(size_t threads, double min_parallel_ns = kMinParallelNs,
                      double min_task_ns = kMinTaskNs, Start start = Start::kNow);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The threads loops are split for, whether or not they all run yet (a
  // constant 1 without threads, so that the splits compile away there).
#if SA_HAVE_THREADS
  size_t threads() const { return threads_; }
#else
  size_t threads() const { return 1; }
#endif
  double min_parallel_ns() const { return min_parallel_ns_; }
  double min_task_ns() const { return min_task_ns_; }

  // Calls task(i, thread) for every i in [0, count), thread in [0,
  // threads()), and returns when all calls have returned. Tasks must not
  // throw. One Run at a time: concurrent callers wait their turn. Not
  // reentrant (a task must not call Run on the same pool).
  template <class Task>
  void Run(size_t count, const Task& task) {
#if SA_HAVE_THREADS
    if (threads() > 1 && count > 1) {
      RunErased(count, &Call<Task>, &task);
      return;
    }
#endif
    for (size_t i = 0; i < count; ++i) task(i, 0);
  }

  // A pool made with Start::kLater: starts the next of its threads (none
  // once all run) and returns, once it runs, how many run, the caller
  // included. A loop under way goes on without it; every later one takes
  // it.
  size_t StartThread();

  // Logical processors of this machine (1 where unknown or without threads;
  // in a threaded wasm module, its threads: SetWasmThreads).
  static size_t HardwareThreads();

 private:
#if SA_HAVE_THREADS
  using Erased = void (*)(const void* task, size_t i, size_t thread);
  template <class Task>
  static void Call(const void* task, size_t i, size_t thread) {
    (*static_cast<const Task*>(task))(i, thread);
  }
  void RunErased(size_t count, Erased call, const void* task);
  void Work(size_t thread);  // takes indices of the current job until none is left
  void WorkerLoop(size_t thread);
#endif

  double min_parallel_ns_, min_task_ns_;
#if SA_HAVE_THREADS
  size_t threads_;
  thread_sync::Mutex run_mutex_;    // one job at a time
  thread_sync::Mutex start_mutex_;  // one StartThread at a time
  thread_sync::Mutex mutex_;        // for the sleeps and wake-ups below
  thread_sync::CondVar wake_, finished_;
  // The current job; written before generation_ is published.
  Erased call_ = nullptr;
  const void* task_ = nullptr;
  size_t count_ = 0;
  std::atomic<size_t> generation_{0};  // counts jobs; a worker runs each new one once
  std::atomic<bool> stop_{false};
  std::atomic<size_t> busy_{0};  // workers still inside the current job
  std::atomic<size_t> next_{0};
  size_t running_ = 0;  // workers inside WorkerLoop (under mutex_): those a job waits for
  thread_sync::CondVar all_running_;  // for StartThread
  std::vector<thread_sync::Thread> workers_;
#endif
};

// The process's pool of `threads` threads (0 = HardwareThreads()), created
// on first use (its threads started as `start` says) and shared by every
// object that asks for the same count for as long as one of them holds it.
std::shared_ptr<ThreadPool> SharedThreadPool(size_t threads,
                                             ThreadPool::Start start = ThreadPool::Start::kNow);

#if defined(__EMSCRIPTEN_PTHREADS__)
// A threaded wasm module runs its pthreads on Web Workers that its loader
// creates with it: a worker created later would only begin once the calling
// thread returns to the event loop, which a forward waiting for it never
// does. Its loader says here how many threads those workers give (the
// calling thread included): HardwareThreads() then returns that, and a pool
// has 1 or that many threads, so that at most one pool holds the workers
// (ThreadPool refuses other counts). 0, the default, sets no limit, for a
// C++ program that sizes emcc's worker pool itself.
void SetWasmThreads(size_t threads);
#endif

}  // namespace simd_attention

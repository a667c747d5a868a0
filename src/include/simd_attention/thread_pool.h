// A fixed pool of threads that runs one parallel loop at a time.
//
// Why our own: Highway 1.0.3 has no contrib/thread_pool, and the loops here
// are few and coarse (GEMM tiles, attention work items, LayerNorm rows), so
// a counter that hands out indices suffices. The calling thread takes part
// as thread 0, so a pool of 1 has no other thread and Run is a plain loop.
// Work is handed out dynamically (the next index to whoever is free), which
// balances uneven items such as causal query blocks.
//
// A loop wakes only the workers its caller asks for (the cost models in
// threading/parallel.h size that from the loop's work), never more than the
// processors this process may run on minus the caller: a pool of more
// threads than processors runs as one of as many threads as processors, so
// that no worker waits for a core another one holds. The caller does not
// wait for a woken worker to arrive: it takes indices itself and waits only
// for those a worker has taken, so a worker that the machine runs late (a
// busy core) costs the loop nothing. Workers spin briefly after a loop (a
// forward runs several back to back), then sleep on a futex (Atomics.wait
// in wasm).
//
// Results never depend on the thread count: callers split work so that each
// output element is computed by exactly one item, in the same order as a
// single thread would (see the cost models where Run is called). Nor on
// which threads take part: a loop runs on those that are running when it
// starts (the caller at least), which is what lets a threaded wasm module's
// threads join as their Web Workers load.
#pragma once

#include <cstddef>
#include <cstdint>
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
// The most threads DefaultThreads() gives: the largest count measured (a
// 16-core Xeon, where S2 and S4 still ran faster on 16 threads than on 8).
constexpr size_t kMaxDefaultThreads = 16;

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
  // pass 0 to split even the smallest loop. `processors`: the most threads
  // that run at once (0: Processors()); the pool starts that many, at most
  // `threads`. Tests pass `threads` to run every thread on a 2-core machine.
  explicit ThreadPool(size_t threads, double min_parallel_ns = kMinParallelNs,
                      double min_task_ns = kMinTaskNs, Start start = Start::kNow,
                      size_t processors = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The threads asked for (a constant 1 without threads, so that the splits
  // compile away there). A task's thread index is below it.
#if SA_HAVE_THREADS
  size_t threads() const { return threads_; }
  // The threads a loop runs on at most: threads(), at most the processors.
  size_t parallelism() const { return parallelism_; }
#else
  size_t threads() const { return 1; }
  size_t parallelism() const { return 1; }
#endif
  double min_parallel_ns() const { return min_parallel_ns_; }
  double min_task_ns() const { return min_task_ns_; }

  // Calls task(i, thread) for every i in [0, count), thread in [0,
  // threads()), on at most `threads` threads (the caller and workers it
  // wakes; fewer while fewer run), and returns when all calls have
  // returned. Tasks must not throw. One Run at a time: concurrent callers
  // wait their turn. Not reentrant (a task must not call Run on the same
  // pool).
  template <class Task>
  void Run(size_t count, size_t threads, const Task& task) {
#if SA_HAVE_THREADS
    if (threads > 1 && count > 1 && parallelism_ > 1 && count <= kMaxCount) {
      RunErased(count, threads, &Call<Task>, &task);
      return;
    }
#endif
    (void)threads;
    for (size_t i = 0; i < count; ++i) task(i, 0);
  }
  // The same on every thread it may run on.
  template <class Task>
  void Run(size_t count, const Task& task) {
    Run(count, parallelism(), task);
  }

  // A pool made with Start::kLater: starts the next of its threads (none
  // once all run) and returns, once it runs, how many run, the caller
  // included. A loop under way goes on without it; every later one may
  // take it.
  size_t StartThread();

  // Logical processors of this machine (1 where unknown or without threads;
  // in a threaded wasm module, its threads: SetWasmThreads).
  static size_t HardwareThreads();
  // The logical processors this process may run on (natively its CPU
  // affinity; in a threaded wasm module what its loader says the machine
  // has, SetWasmProcessors; 1 without threads): no loop runs on more.
  static size_t Processors();
  // The thread count 0 stands for: the physical cores this process may run
  // on (SMT siblings share one core's vector units), at most
  // kMaxDefaultThreads; in a threaded wasm module its threads.
  static size_t DefaultThreads();

 private:
#if SA_HAVE_THREADS
  // A loop's count and next index share one word (claim_).
  static constexpr size_t kMaxCount = 0xffffffffu;
  using Erased = void (*)(const void* task, size_t i, size_t thread);
  template <class Task>
  static void Call(const void* task, size_t i, size_t thread) {
    (*static_cast<const Task*>(task))(i, thread);
  }
  // A worker's wake-up word, on a cache line of its own.
  struct alignas(64) Slot {
    std::atomic<uint32_t> wake{0};  // bumped to wake the worker
    std::atomic<bool> sleeping{false};
  };
  void RunErased(size_t count, size_t threads, Erased call, const void* task);
  void Wake(Slot& slot);
  void Work(size_t thread);  // takes indices of the current job until none is left
  void WorkerLoop(size_t thread);
#endif

  double min_parallel_ns_, min_task_ns_;
#if SA_HAVE_THREADS
  size_t threads_, parallelism_;
  thread_sync::Mutex run_mutex_;    // one job at a time
  thread_sync::Mutex start_mutex_;  // one StartThread at a time
  // The current job; written before claim_ publishes it, read by a thread
  // only once it has claimed an index of it (the job cannot end before
  // that index is done, so they stay valid while read).
  Erased call_ = nullptr;
  const void* task_ = nullptr;
  // (count << 32) | next index to hand out: an index is claimed by a
  // compare-exchange, so a thread woken late, or holding an older job's
  // word, claims only an index of the job under way, or nothing.
  std::atomic<uint64_t> claim_{0};
  alignas(64) std::atomic<uint32_t> done_{0};  // indices of the current job finished
  std::atomic<bool> caller_sleeping_{false};   // waits on done_
  std::atomic<bool> stop_{false};
  std::unique_ptr<Slot[]> slots_;  // [parallelism_]; slot 0 (the caller's) unused
  // Workers inside WorkerLoop: threads 1 to running_, as they start in order.
  std::atomic<size_t> running_{0};
  thread_sync::Mutex mutex_;          // for all_running_
  thread_sync::CondVar all_running_;  // for StartThread
  std::vector<thread_sync::Thread> workers_;
#endif
};

// The process's pool of `threads` threads (0 = DefaultThreads()), created
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
// The logical processors the page or process reports
// (navigator.hardwareConcurrency, os.availableParallelism()): no loop runs
// on more threads. 0, the default: unknown, no limit.
void SetWasmProcessors(size_t processors);
#endif

}  // namespace simd_attention

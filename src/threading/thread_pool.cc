#include "simd_attention/thread_pool.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#if SA_HAVE_THREADS
#include <map>
#endif
#if defined(__linux__)
#include <sched.h>

#include <fstream>
#include <set>
#include <utility>
#endif

namespace simd_attention {

#if defined(__EMSCRIPTEN_PTHREADS__)
namespace {
std::atomic<size_t> wasm_threads{0};     // 0: no limit (see SetWasmThreads)
std::atomic<size_t> wasm_processors{0};  // 0: unknown
}  // namespace

void SetWasmThreads(size_t threads) { wasm_threads.store(threads); }
void SetWasmProcessors(size_t processors) { wasm_processors.store(processors); }
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

size_t ThreadPool::Processors() {
#if defined(__EMSCRIPTEN_PTHREADS__)
  if (const size_t n = wasm_processors.load(); n != 0) return n;
  return SIZE_MAX;
#elif defined(__linux__)
  // The affinity mask, which taskset, cgroup cpusets and container CPU
  // pinning narrow (hardware_concurrency counts every processor online).
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    if (const int n = CPU_COUNT(&set); n > 0) return size_t(n);
  }
  return HardwareThreads();
#else
  return HardwareThreads();
#endif
}

size_t ThreadPool::DefaultThreads() {
#if defined(__EMSCRIPTEN__)
  return HardwareThreads();
#else
  size_t cores = Processors();
#if defined(__linux__)
  // Distinct (package, core) pairs among the processors this process may
  // run on; where sysfs does not tell, every processor counts.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    std::set<std::pair<long, long>> seen;
    bool known = true;
    for (int cpu = 0; cpu < CPU_SETSIZE && known; ++cpu) {
      if (!CPU_ISSET(cpu, &set)) continue;
      const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
      long package = -1, core = -1;
      std::ifstream(dir + "physical_package_id") >> package;
      std::ifstream(dir + "core_id") >> core;
      known = package >= 0 && core >= 0;
      seen.emplace(package, core);
    }
    if (known && !seen.empty()) cores = seen.size();
  }
#endif
  return std::clamp<size_t>(cores, 1, kMaxDefaultThreads);
#endif
}

ThreadPool::ThreadPool(size_t threads, double min_parallel_ns, double min_task_ns, Start start,
                       size_t processors)
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
  parallelism_ = std::clamp<size_t>(processors == 0 ? Processors() : processors, 1, threads);
  slots_ = std::make_unique<Slot[]>(parallelism_);
  workers_.reserve(parallelism_ - 1);  // never moved: StartThread may run beside a job
  if (start == Start::kLater) return;
  while (StartThread() < parallelism_) {
  }
#else
  (void)start;
  (void)processors;
  if (threads > 1) {
    throw std::invalid_argument("threads: this build runs on one thread (it was compiled "
                                "without threads), got " + std::to_string(threads));
  }
#endif
}

size_t ThreadPool::StartThread() {
#if SA_HAVE_THREADS
  std::lock_guard<thread_sync::Mutex> one_at_a_time(start_mutex_);
  if (workers_.size() + 1 < parallelism_) {
    const size_t t = workers_.size() + 1;
    workers_.emplace_back([this, t] { WorkerLoop(t); });
    // The next loop then may take it: it runs (in wasm, on a worker that
    // has loaded, it starts without this thread's event loop).
    std::lock_guard<thread_sync::Mutex> lock(mutex_);
    all_running_.Wait(mutex_, [this] { return running_.load() == workers_.size(); });
  }
  return workers_.size() + 1;
#else
  return 1;
#endif
}

#if SA_HAVE_THREADS
namespace {

// A forward runs several short loops back to back (projections, attention,
// output projection) with serial work between them (the checks, a decoding
// step's serial attention), and a caller often calls again at once: a
// thread waiting for the next loop, or the caller for the last index of
// one, first spins this long before it sleeps, so that the next loop finds
// the workers awake instead of paying a futex wake-up (5-20 us in a VM,
// more on a busy host) per worker. On 2 threads, 150 us against 50: S1
// 0.36 against 0.42 ms in wasm, 0.198 against 0.218 natively; C1 and D1
// 2-10% faster. Only woken workers spin, at most one per processor beside
// the caller.
constexpr double kSpinMicroseconds = 150;

inline void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpinMicroseconds have passed; returns done().
// Now and then it yields, so that a thread the machine's other work left
// without a core can run.
template <class Done>
bool SpinUntil(const Done& done) {
  const double until = thread_sync::Microseconds() + kSpinMicroseconds;
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    Pause();
    if (i % 64 == 0) {
      if (thread_sync::Microseconds() > until) return done();
      if (i % 1024 == 0) std::this_thread::yield();
    }
  }
}

}  // namespace

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  for (size_t t = 1; t <= workers_.size(); ++t) Wake(slots_[t]);
  for (thread_sync::Thread& w : workers_) w.join();
}

void ThreadPool::Wake(Slot& slot) {
  // seq_cst with the worker's sleeping/wake pair: either it sees the new
  // wake value before it sleeps, or this sees it sleeping.
  slot.wake.fetch_add(1, std::memory_order_seq_cst);
  if (slot.sleeping.load(std::memory_order_seq_cst)) thread_sync::WakeAll(slot.wake);
}

void ThreadPool::Work(size_t thread) {
  uint64_t c = claim_.load(std::memory_order_acquire);
  for (;;) {
    const uint32_t count = uint32_t(c >> 32), next = uint32_t(c);
    if (next >= count) return;
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      continue;  // c now holds the word's value
    }
    call_(task_, next, thread);
    if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == count &&
        caller_sleeping_.load(std::memory_order_seq_cst)) {
      thread_sync::WakeAll(done_);
    }
    c = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::RunErased(size_t count, size_t threads, Erased call, const void* task) {
  std::lock_guard<thread_sync::Mutex> run(run_mutex_);
  call_ = call;
  task_ = task;
  done_.store(0, std::memory_order_relaxed);
  claim_.store(uint64_t(count) << 32, std::memory_order_release);
  const size_t helpers = std::min({threads, count, parallelism_}) - 1;
  const size_t woken = std::min(helpers, running_.load(std::memory_order_acquire));
  for (size_t t = 1; t <= woken; ++t) Wake(slots_[t]);
  Work(0);
  // The job's fields stay valid until every index taken is done.
  const uint32_t n = uint32_t(count);
  if (SpinUntil([&] { return done_.load(std::memory_order_acquire) == n; })) return;
  caller_sleeping_.store(true, std::memory_order_seq_cst);
  for (uint32_t d; (d = done_.load(std::memory_order_seq_cst)) != n;) {
    thread_sync::WaitWhile(done_, d);
  }
  caller_sleeping_.store(false, std::memory_order_relaxed);
}

void ThreadPool::WorkerLoop(size_t thread) {
  Slot& slot = slots_[thread];
  uint32_t seen = slot.wake.load(std::memory_order_acquire);
  {
    std::lock_guard<thread_sync::Mutex> lock(mutex_);
    running_.fetch_add(1, std::memory_order_release);
  }
  all_running_.NotifyAll();
  for (;;) {
    if (!SpinUntil([&] { return slot.wake.load(std::memory_order_acquire) != seen; })) {
      slot.sleeping.store(true, std::memory_order_seq_cst);
      while (slot.wake.load(std::memory_order_seq_cst) == seen) {
        thread_sync::WaitWhile(slot.wake, seen);
      }
      slot.sleeping.store(false, std::memory_order_relaxed);
    }
    seen = slot.wake.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_seq_cst)) return;
    Work(thread);
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
  if (threads == 0) threads = ThreadPool::DefaultThreads();
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

// Where a forward on 2 threads loses time against half of its 1-thread time
// (natively). Three measurements, each printed as a table:
//
//   threads_profile loop WORKLOAD THREADS SECONDS
//       forwards back to back (for `perf record`), then each thread's CPU
//       time per forward and its time runnable but not running (taken by
//       another process), from /proc/self/task/*/schedstat
//   threads_profile barrier [ROUNDS]
//       one fork/join of the pool of 2 (ThreadPool::Run of 2 empty tasks):
//       back to back (the worker still spinning) and after a gap of serial
//       work on the caller of 5 to 400 us (the worker spinning, then
//       asleep), median ns per Run over interleaved rounds
//   threads_profile contend WORKLOAD [ROUNDS]
//       one forward on 1 thread alone against the same forward while a
//       second thread runs forwards of the same workload on its own object
//       (the other core busy: clock, shared L3 and memory), interleaved
//       rounds, medians
//   threads_profile gemm M K N [ROUNDS]
//       a projection's GEMM (highway, the best target; four weight matrices
//       in turn, as in a forward) as ParallelGemm runs it: on 1 thread; on
//       the pool of 2; its tasks (column-panel ranges) one after another on
//       1 thread; the first half of the columns alone on 1 thread; and on
//       the pool of 2 split into two halves, or into one task per panel
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/packed_gemm.h"
#include "bench/random_fill.h"
#include "bench/workloads.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/backend.h"
#include "simd_attention/thread_pool.h"
#include "threading/parallel.h"

namespace simd_attention::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const Workload& Find(const char* name) {
  for (const Workload& w : Workloads()) {
    if (!std::strcmp(w.name, name)) return w;
  }
  std::fprintf(stderr, "unknown workload %s\n", name);
  std::exit(2);
}

// One forward of a workload (as threads_bench runs it; no decode steps).
struct Runner {
  const Workload& w;
  std::unique_ptr<MultiHeadAttention> mha;
  std::vector<float> x, memory;

  Runner(const Workload& workload, size_t threads) : w(workload) {
    if (w.cache_len > 0) {
      std::fprintf(stderr, "%s is a decode step: not here\n", w.name);
      std::exit(2);
    }
    const std::vector<float> weights = RandomVector(w.d_model * w.d_model, 0.05f, 4);
    mha = std::make_unique<MultiHeadAttention>(
        MhaConfig{.d_model = w.d_model, .num_heads = w.heads, .threads = threads});
    const std::vector<float> bias(w.d_model, 0.01f);
    mha->SetWeights({weights, weights, weights, weights, bias, bias, bias, bias});
    x = RandomVector(w.tq * w.d_model, 1.0f, 1);
    memory = RandomVector(w.tk * w.d_model, 1.0f, 2);
  }

  float Run() {
    MhaOptions o;
    o.causal = w.causal;
    const Tensor3 q{x, 1, w.tq, w.d_model};
    if (w.cross) {
      const Tensor3 m{memory, 1, w.tk, w.d_model};
      return mha->Forward(q, m, m, o).output[0];
    }
    return mha->Forward(q, o).output[0];
  }
};

// Per thread of this process: ns on a CPU, ns runnable but waiting for one.
std::map<int, std::pair<double, double>> SchedStats() {
  std::map<int, std::pair<double, double>> out;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/schedstat");
    double run = 0, wait = 0;
    if (f >> run >> wait) out[std::atoi(e->d_name)] = {run, wait};
  }
  closedir(dir);
  return out;
}

int Loop(const Workload& w, size_t threads, double seconds) {
  Runner r(w, threads);
  for (int i = 0; i < 3; ++i) r.Run();  // warm-up; starts the pool's workers
  const auto before = SchedStats();
  const auto start = Clock::now();
  size_t n = 0;
  float sink = 0;
  while (Ms(start, Clock::now()) < seconds * 1e3) {
    sink += r.Run();
    ++n;
  }
  const double wall = Ms(start, Clock::now());
  const auto after = SchedStats();
  std::printf("loop %s, %zu thread(s): %zu forwards, %.4f ms each (wall)%s\n", w.name, threads,
              n, wall / double(n), sink == 12345.f ? " " : "");
  std::printf("| thread (tid) | on CPU, ms per forward | share of wall | runnable, not running, ms per forward |\n");
  std::printf("|---|---:|---:|---:|\n");
  for (const auto& [tid, s] : after) {
    const auto it = before.find(tid);
    if (it == before.end()) continue;
    const double run = (s.first - it->second.first) / 1e6 / double(n);
    const double wait = (s.second - it->second.second) / 1e6 / double(n);
    std::printf("| %d | %.4f | %.0f%% | %.4f |\n", tid, run, 100 * run / (wall / double(n)), wait);
  }
  return 0;
}

// Serial work of about `us` microseconds on the calling thread.
void BusyFor(double us) {
  const auto start = Clock::now();
  while (Ms(start, Clock::now()) * 1e3 < us) {
  }
}

int Barrier(size_t rounds) {
  ThreadPool pool(2, 0, 0);
  std::atomic<size_t> sink{0};
  auto run = [&] { pool.Run(2, [&](size_t i, size_t) { sink.fetch_add(i, std::memory_order_relaxed); }); };
  for (int i = 0; i < 1000; ++i) run();
  const double gaps[] = {0, 5, 20, 50, 100, 200, 400};
  std::map<double, std::vector<double>> ns;
  for (size_t r = 0; r < rounds; ++r) {
    for (double gap : gaps) {
      const int reps = gap == 0 ? 2000 : 50;
      double total = 0;
      for (int i = 0; i < reps; ++i) {
        BusyFor(gap);
        const auto a = Clock::now();
        run();
        total += Ms(a, Clock::now()) * 1e6;
      }
      ns[gap].push_back(total / reps);
    }
  }
  std::printf("barrier: ThreadPool::Run of 2 empty tasks on a pool of 2, median of %zu rounds\n",
              rounds);
  std::printf("| serial work before it, us | ns per Run |\n|---:|---:|\n");
  for (double gap : gaps) std::printf("| %.0f | %.0f |\n", gap, Median(ns[gap]));
  return 0;
}

int Contend(const Workload& w, size_t rounds) {
  Runner alone(w, 1), busy(w, 1);
  for (int i = 0; i < 3; ++i) alone.Run(), busy.Run();
  std::atomic<int> mode{0};  // 0 idle, 1 run, 2 stop
  std::thread other([&] {
    float sink = 0;
    for (;;) {
      const int m = mode.load();
      if (m == 2) break;
      if (m == 1) {
        sink += busy.Run();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    if (sink == 12345.f) std::puts("");
  });
  const size_t reps = std::max<size_t>(3, size_t(2e6 / WorkloadFlops(w) * 50));
  std::vector<double> t_alone, t_busy;
  for (size_t r = 0; r < rounds; ++r) {
    for (int m : {0, 1}) {
      mode.store(m);
      std::this_thread::sleep_for(std::chrono::milliseconds(m == 0 ? 5 : 1));
      const auto a = Clock::now();
      for (size_t i = 0; i < reps; ++i) alone.Run();
      (m == 0 ? t_alone : t_busy).push_back(Ms(a, Clock::now()) / double(reps));
    }
  }
  mode.store(2);
  other.join();
  const double a = Median(t_alone), b = Median(t_busy);
  std::printf("contend %s: 1 thread alone %.4f ms, with the other core running the same workload %.4f ms (%+.1f%%), %zu rounds\n",
              w.name, a, b, 100 * (b / a - 1), rounds);
  return 0;
}

int Gemm(size_t m, size_t k, size_t n, size_t rounds) {
  const KernelTable& kt = BestKernels(Backend::kHighway);
  const size_t weights = 4;
  std::vector<std::vector<float>> packed;
  for (size_t i = 0; i < weights; ++i) {
    const std::vector<float> w = RandomVector(k * n, 0.05f, unsigned(2 + i));
    packed.emplace_back(PackedFloats(kt, k, n));
    kt.pack_b(w.data(), k, n, packed.back().data());
  }
  const std::vector<float> a = RandomVector(m * k, 1.0f, 1);
  std::vector<float> c(m * n);
  ThreadPool one(1), two(2);
  const size_t panels = (n + kt.panel_width - 1) / kt.panel_width;
  const size_t tasks = SplitWork(two, 2.0 * double(m) * double(k) * double(n) / 50.0 +
                                          double(k) * double(panels * kt.panel_width) * 4.0 / 20.0,
                                 panels).tasks;
  size_t next = 0;
  auto args = [&](size_t p0, size_t p1) {
    return GemmArgs{.a = a.data(), .lda = k, .m = m, .k = k,
                    .packed_b = packed[next].data() + p0 * kt.panel_width * k, .packed_rows = k,
                    .k_begin = 0, .n = std::min(n, p1 * kt.panel_width) - p0 * kt.panel_width,
                    .packed_bias = nullptr, .c = c.data() + p0 * kt.panel_width, .ldc = n};
  };
  const char* names[] = {"1 thread", "2 threads (ParallelGemm)", "its tasks in turn, 1 thread",
                         "first half of the columns, 1 thread", "2 threads, one half each (2 tasks)",
                         "2 threads, a task per panel"};
  constexpr int kVariants = 6;
  auto run = [&](int variant) {
    switch (variant) {
      case 0: ParallelGemm(one, kt, args(0, panels)); break;
      case 1: ParallelGemm(two, kt, args(0, panels)); break;
      case 2:
        for (size_t t = 0; t < tasks; ++t) kt.gemm(args(panels * t / tasks, panels * (t + 1) / tasks));
        break;
      case 3: kt.gemm(args(0, panels / 2)); break;
      case 4:
        two.Run(2, [&](size_t t, size_t) { kt.gemm(args(panels * t / 2, panels * (t + 1) / 2)); });
        break;
      default:
        two.Run(panels, [&](size_t p, size_t) { kt.gemm(args(p, p + 1)); });
        break;
    }
    next = (next + 1) % weights;
  };
  const size_t reps = std::max<size_t>(4, size_t(4e8 / (2.0 * double(m * k * n))));
  std::vector<double> t[kVariants];
  for (int v = 0; v < kVariants; ++v) run(v);
  for (size_t r = 0; r < rounds; ++r) {
    for (int v = 0; v < kVariants; ++v) {
      const auto start = Clock::now();
      for (size_t i = 0; i < reps; ++i) run(v);
      t[v].push_back(Ms(start, Clock::now()) / double(reps));
    }
  }
  std::printf("gemm %zux%zux%zu (highway %s, %zu panels of %zu, %zu tasks on 2 threads), medians of %zu rounds\n",
              m, k, n, DescribeKernels(kt).name, panels, kt.panel_width, tasks, rounds);
  std::printf("| variant | ms | GFLOP/s |\n|---|---:|---:|\n");
  for (int v = 0; v < kVariants; ++v) {
    const double ms = Median(t[v]);
    const double flops = 2.0 * double(m) * double(k) * double(v == 3 ? (panels / 2) * kt.panel_width : n);
    std::printf("| %s | %.4f | %.1f |\n", names[v], ms, flops / ms / 1e6);
  }
  return 0;
}

}  // namespace
}  // namespace simd_attention::bench

int main(int argc, char** argv) {
  using namespace simd_attention::bench;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "loop" && argc == 5) {
    return Loop(Find(argv[2]), std::strtoul(argv[3], nullptr, 10), std::atof(argv[4]));
  }
  if (mode == "gemm" && argc >= 5) {
    return Gemm(std::strtoul(argv[2], nullptr, 10), std::strtoul(argv[3], nullptr, 10),
                std::strtoul(argv[4], nullptr, 10), argc > 5 ? std::strtoul(argv[5], nullptr, 10) : 9);
  }
  if (mode == "barrier") return Barrier(argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 15);
  if (mode == "contend" && argc >= 3) {
    return Contend(Find(argv[2]), argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 15);
  }
  std::fprintf(stderr,
               "usage: threads_profile loop WORKLOAD THREADS SECONDS | barrier [ROUNDS] | "
               "contend WORKLOAD [ROUNDS] | gemm M K N [ROUNDS]\n");
  return 2;
}

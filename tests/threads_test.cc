// Results are bit-identical for every thread count: 1, 2, 3, 4 and 7 threads
// on every kernel table, for every golden `mha` case, random problems with
// every mask and output, incremental decoding through a KV cache, and both
// layers. The pools here split every loop however small (thresholds 0), so
// the splits are exercised on small shapes too.
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "golden.h"
#include "random_mha.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_layers.h"
#include "test_util.h"
#include "storage/packed_weights.h"
#include "threading/parallel.h"

namespace simd_attention {
namespace {

using testing::MhaProblem;

#if SA_HAVE_THREADS
constexpr size_t kThreadCounts[] = {2, 3, 4, 7};

// Every thread runs, however many processors this machine has.
std::shared_ptr<ThreadPool> SplittingPool(size_t threads) {
  return std::make_shared<ThreadPool>(threads, 0.0, 0.0, ThreadPool::Start::kNow, threads);
}

class Threads : public testing::TableTest {};

void ExpectSameResult(const MhaResult& a, const MhaResult& b, size_t threads) {
  EXPECT_EQ(a.output, b.output) << threads << " threads";
  EXPECT_EQ(a.attn_weights, b.attn_weights) << threads << " threads";
  EXPECT_EQ(a.per_head_output, b.per_head_output) << threads << " threads";
  EXPECT_EQ(a.head_output, b.head_output) << threads << " threads";
}

void ExpectSameResult(const std::vector<float>& a, const std::vector<float>& b, size_t threads) {
  EXPECT_EQ(a, b) << threads << " threads";
}

// `run(pool)` gives on a pool of every count what it gives on one thread.
template <class Run>
void ExpectSameOnEveryPool(Run run) {
  const auto want = run(SplittingPool(1));
  for (const size_t threads : kThreadCounts) {
    ExpectSameResult(run(SplittingPool(threads)), want, threads);
  }
}

TEST_P(Threads, GoldenCasesAreBitIdentical) {
  for (const std::string& name : testing::GoldenCaseNames("mha")) {
    const testing::GoldenCase c = testing::LoadGoldenCase(name);
    const testing::MhaCaseInputs in = testing::MhaInputs(c);
    MhaOptions o = in.options;
    o.need_weights = o.need_per_head_output = o.need_intermediates = true;
    ExpectSameOnEveryPool([&](std::shared_ptr<ThreadPool> pool) {
      MultiHeadAttention mha(in.config, table(), std::move(pool));
      mha.SetWeights(in.weights);
      return mha.Forward(in.query, in.key, in.value, o);
    });
  }
}

// Shapes with several query blocks per head (tq > 32), ragged edges, every
// mask, causal with tq < tk, so that query chunks and column panels split.
TEST_P(Threads, RandomProblemsWithEveryMaskAreBitIdentical) {
  std::mt19937 rng(17);
  for (const bool causal : {false, true}) {
    for (const int mask : {0, 1, 2}) {
      MhaProblem p = testing::RandomProblem(MhaConfig{.d_model = 40, .num_heads = 5}, 2, 75, 97, rng);
      MhaOptions o;
      o.causal = causal;
      o.need_weights = o.need_per_head_output = true;
      std::vector<uint8_t> padding;
      std::vector<float> additive;
      if (mask == 1) {
        padding = testing::RandomKeyPadding(2, 97, 0.7, rng);
        o.key_padding_mask = padding;
      } else if (mask == 2) {
        additive = testing::RandomAdditiveMask(2 * 5 * 75 * 97, 0.2, rng);
        o.attn_mask = additive;
      }
      ExpectSameOnEveryPool([&](std::shared_ptr<ThreadPool> pool) {
        MultiHeadAttention mha(p.config, table(), std::move(pool));
        mha.SetWeights(p.weights.View());
        return mha.Forward(p.query.View(), p.key.View(), p.value.View(), o);
      });
    }
  }
}

// Rotary positions on grouped-query heads of 12 floats: the projections'
// units then hold one head or several (kernels/rope.h), rotated by the task
// that wrote them.
TEST_P(Threads, RotaryProblemsAreBitIdentical) {
  std::mt19937 rng(19);
  for (const RopeStyle style : {RopeStyle::kHalf, RopeStyle::kInterleaved}) {
    const MhaConfig config{.d_model = 36, .num_heads = 6, .head_dim = 12, .num_kv_heads = 2,
                           .rope = {.style = style, .base = 10000.0, .rotary_dim = 8}};
    const MhaProblem p = testing::RandomProblem(config, 2, 70, 70, rng);
    MhaOptions o;
    o.causal = true;
    o.position_offset = 3;
    ExpectSameOnEveryPool([&](std::shared_ptr<ThreadPool> pool) {
      MultiHeadAttention mha(p.config, table(), std::move(pool));
      mha.SetWeights(p.weights.View());
      const Tensor3 x = p.query.View();
      return mha.Forward(x, x, x, o);
    });
  }
}

// int8 and q4 weights: the integer GEMM with A quantized once for every
// task (kernels/int8_activations.h), on the projections of 150 rows (a
// prefill, tiles and their bottom edge), the per-head outputs (one kernel
// call per head, quantizing its own slice; for q4 slices that start inside
// a block) and a decoding step of one row per batch item.
TEST_P(Threads, IntegerWeightsAreBitIdentical) {
  for (const WeightType type : {WeightType::kInt8, WeightType::kQ4}) {
    SCOPED_TRACE(Traits(type).name);
    std::mt19937 rng(29);
    const MhaConfig config{.d_model = 48, .num_heads = 6, .weights = type};
    const MhaProblem p = testing::RandomProblem(config, 2, 75, 75, rng);
    const testing::OwnedTensor step = testing::RandomTensor(2, 1, 48, rng);
    MhaOptions o;
    o.need_per_head_output = true;
    ExpectSameOnEveryPool([&](std::shared_ptr<ThreadPool> pool) {
      MultiHeadAttention mha(p.config, table(), std::move(pool));
      mha.SetWeights(p.weights.View());
      const Tensor3 x = p.query.View();
      MhaResult r = mha.Forward(x, x, x, o);
      KVCache cache = mha.CreateKVCache(2, 76);
      mha.ForwardIncremental(x, cache);
      const std::vector<float> decoded = mha.ForwardIncremental(step.View(), cache).output;
      r.output.insert(r.output.end(), decoded.begin(), decoded.end());
      return r;
    });
  }
}

// Every type a cache holds: a 16-bit or int8 cache's rows are read in registers by
// a decoding step's dot products, widened for the prompt's GEMM.
TEST_P(Threads, IncrementalDecodingIsBitIdentical) {
  for (const WeightTypeTraits& t : kWeightTypes) {
    if (!t.in_caches) continue;
    SCOPED_TRACE(t.name);
    std::mt19937 rng(23);
    const MhaConfig config{.d_model = 48, .num_heads = 6, .cache_type = t.value};
    const testing::OwnedWeights w = testing::RandomWeights(testing::Resolve(config), rng);
    const testing::OwnedTensor prompt = testing::RandomTensor(2, 40, 48, rng);
    const testing::OwnedTensor step = testing::RandomTensor(2, 1, 48, rng);
    ExpectSameOnEveryPool([&](std::shared_ptr<ThreadPool> pool) {
      MultiHeadAttention mha(config, table(), std::move(pool));
      mha.SetWeights(w.View());
      KVCache cache = mha.CreateKVCache(2, 48);
      std::vector<float> out = mha.ForwardIncremental(prompt.View(), cache).output;
      for (int i = 0; i < 5; ++i) {
        const std::vector<float> o = mha.ForwardIncremental(step.View(), cache).output;
        out.insert(out.end(), o.begin(), o.end());
      }
      return out;
    });
  }
}

TEST_P(Threads, LayersAreBitIdentical) {
  std::mt19937 rng(29);
  const size_t d = 32, f = 72;
  const MhaConfig mc = testing::Resolve(MhaConfig{.d_model = d, .num_heads = 4});
  const testing::OwnedWeights self = testing::RandomWeights(mc, rng);
  const testing::OwnedWeights cross = testing::RandomWeights(mc, rng);
  const std::vector<float> w1 = testing::RandomVector(d * f, 0.2f, rng), b1 = testing::RandomVector(f, 0.2f, rng);
  const std::vector<float> w2 = testing::RandomVector(f * d, 0.1f, rng), b2 = testing::RandomVector(d, 0.1f, rng);
  const std::vector<float> g = testing::RandomVector(d, 1.0f, rng), be = testing::RandomVector(d, 1.0f, rng);
  const testing::OwnedTensor x = testing::RandomTensor(2, 37, d, rng);
  const testing::OwnedTensor memory = testing::RandomTensor(2, 45, d, rng);
  for (const bool norm_first : {false, true}) {
    LayerConfig c{.d_model = d, .num_heads = 4, .ffn_dim = f, .norm_first = norm_first,
                  .activation = Activation::kGeluErf};
    ExpectSameOnEveryPool([&](std::shared_ptr<ThreadPool> pool) {
      TransformerEncoderLayer enc(c, table(), pool);
      enc.SetWeights(self.View(), {w1, b1, w2, b2}, {g, be}, {g, be});
      TransformerDecoderLayer dec(c, table(), pool);
      dec.SetWeights(self.View(), cross.View(), {w1, b1, w2, b2}, {g, be}, {g, be}, {g, be});
      std::vector<float> out = enc.Forward(x.View());
      const std::vector<float> o = dec.Forward(x.View(), memory.View());
      out.insert(out.end(), o.begin(), o.end());
      return out;
    });
  }
}

// Projections with fewer column panels than tasks wanted (C1's 32 rows x
// 512 columns on 16 threads) split their rows too, in parts of whole row
// tiles, the last with the rows past them: every weight type, row counts
// with and without such a remainder, over more than a K block.
TEST_P(Threads, GemmsSplitByRowsAreBitIdentical) {
  const KernelTable& t = table();
  const size_t tile = t.gemm_tile_rows, k = t.gemm_k_block + 3, n = 2 * t.panel_width + 5;
  std::mt19937 rng(31);
  const std::vector<float> w = testing::RandomVector(k * n, 0.5f, rng);
  const std::vector<float> bias = testing::RandomVector(n, 0.5f, rng);
  for (const WeightType type :
       {WeightType::kF32, WeightType::kF16, WeightType::kBF16, WeightType::kInt8,
        WeightType::kQ4}) {
    const PackedMatrix b = PackWeights(t, w, {}, bias, k, n, type);
    for (const size_t m : {4 * tile, 3 * tile + 2, 2 * tile + tile - 1}) {
      SCOPED_TRACE("type " + std::to_string(int(type)) + ", m " + std::to_string(m));
      const std::vector<float> a = testing::RandomVector(m * k, 1.0f, rng);
      auto product = [&](ThreadPool& pool) {
        std::vector<float> c(m * n);
        ParallelMultiplyPacked(pool, t, a.data(), m, b, c.data(), n);
        return c;
      };
      ThreadPool one(1);
      const std::vector<float> want = product(one);
      for (const size_t threads : {size_t{2}, size_t{7}, size_t{16}}) {
        ExpectSameResult(product(*SplittingPool(threads)), want, threads);
      }
    }
  }
}

// The row parts: none while the column units give every thread
// kTasksPerThread tasks, else enough that they do, at most a part per whole
// row tile and within the tasks allowed.
TEST(SplitWork, GemmRowsWhereColumnsAreTooFew) {
  EXPECT_EQ(GemmRowParts(4, 16, 2, 64), 1u);     // C1 on 2 threads: 16 panels suffice
  EXPECT_EQ(GemmRowParts(4, 16, 16, 64), 4u);    // C1 on 16 threads
  EXPECT_EQ(GemmRowParts(16, 12, 16, 1000), 6u);  // S4's 12 panels of 512 rows
  EXPECT_EQ(GemmRowParts(2, 16, 16, 64), 2u);    // at most the whole tiles
  EXPECT_EQ(GemmRowParts(0, 16, 16, 64), 1u);    // a decoding step's one row
  EXPECT_EQ(GemmRowParts(4, 16, 16, 40), 2u);    // at most the tasks allowed
}

// A pool whose threads start later, one by one (a threaded wasm module's,
// as its workers load): each forward is split for its 4 threads whatever
// number of them runs, and gives the one-thread result from none to all.
TEST_P(Threads, ThreadsStartingLaterChangeNoBit) {
  std::mt19937 rng(31);
  const MhaConfig config{.d_model = 64, .num_heads = 4};
  const MhaProblem p = testing::RandomProblem(config, 2, 75, 75, rng);
  MhaOptions options;
  options.causal = true;
  options.need_weights = options.need_per_head_output = true;
  auto forward = [&](std::shared_ptr<ThreadPool> pool) {
    MultiHeadAttention mha(p.config, table(), std::move(pool));
    mha.SetWeights(p.weights.View());
    return mha.Forward(p.query.View(), p.key.View(), p.value.View(), options);
  };
  const MhaResult want = forward(SplittingPool(1));
  auto pool = std::make_shared<ThreadPool>(4, 0.0, 0.0, ThreadPool::Start::kLater, 4);
  ExpectSameResult(forward(pool), want, 1);
  for (size_t started = 2; started <= 4; ++started) {
    EXPECT_EQ(pool->StartThread(), started);
    for (int i = 0; i < 3; ++i) ExpectSameResult(forward(pool), want, started);
  }
  EXPECT_EQ(pool->StartThread(), 4u);  // all run: nothing more to start
}

// The shared pools of MhaConfig::threads: one per count, alive while used.
TEST(SharedThreadPool, OnePerCountWhileHeld) {
  const std::shared_ptr<ThreadPool> a = SharedThreadPool(3), b = SharedThreadPool(3);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->threads(), 3u);
  EXPECT_NE(SharedThreadPool(2), a);
  EXPECT_EQ(SharedThreadPool(0)->threads(), ThreadPool::DefaultThreads());
  MultiHeadAttention mha(MhaConfig{.d_model = 8, .num_heads = 2, .threads = 3});
  EXPECT_EQ(&mha.pool(), a.get());
  EXPECT_EQ(mha.config().threads, 3u);
}

TEST(ThreadPool, RunsEveryIndexOnceOnEveryThreadCount) {
  for (const size_t threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads, kMinParallelNs, kMinTaskNs, ThreadPool::Start::kNow, threads);
    for (const size_t count : {0, 1, 5, 1000}) {
      std::vector<int> hits(count, 0);
      std::vector<int> by_thread(threads, 0);
      pool.Run(count, [&](size_t i, size_t thread) {
        ++hits[i];  // each index is given to one thread only
        ASSERT_LT(thread, threads);
      });
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(hits[i], 1) << i;
    }
  }
  EXPECT_THROW(ThreadPool(0), std::invalid_argument);
}

// Threads started later take part in every loop after StartThread returns;
// until then the loops run on those that run, the caller alone at first. A
// pool may end with threads not started.
TEST(ThreadPool, ThreadsStartedLaterTakePartOnceRunning) {
  ThreadPool pool(3, 0.0, 0.0, ThreadPool::Start::kLater, 3);
  EXPECT_EQ(pool.threads(), 3u);
  // Which threads ran the tasks of one loop. With `wait_for_two`, the task
  // given index 0 waits (up to 10 s) until two threads have run tasks, so
  // that a running thread cannot miss the loop on a busy machine.
  auto threads_used = [&](bool wait_for_two) {
    std::vector<int> hits(64, 0);
    std::atomic<unsigned> used{0};
    pool.Run(hits.size(), [&](size_t i, size_t thread) {
      ++hits[i];
      used |= 1u << thread;
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (wait_for_two && i == 0 && std::popcount(used.load()) < 2 &&
             std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
    });
    for (int h : hits) EXPECT_EQ(h, 1);
    return used.load();
  };
  EXPECT_EQ(threads_used(false), 0b001u);
  EXPECT_EQ(pool.StartThread(), 2u);
  EXPECT_EQ(threads_used(true), 0b011u);
  for (const size_t started : {1, 2, 3}) {
    ThreadPool ending(3, 0.0, 0.0, ThreadPool::Start::kLater, 3);
    for (size_t t = 1; t < started; ++t) ending.StartThread();
  }
}

// Which threads ran the tasks of one loop of `count` tasks on at most
// `threads` threads: a bit per thread index. Every task waits (up to 10 s)
// until `wait_for` threads have run tasks, so that one thread cannot take
// them all before the others wake, on a busy machine too.
unsigned ThreadsUsed(ThreadPool& pool, size_t count, size_t threads, int wait_for) {
  std::vector<int> hits(count, 0);
  std::atomic<unsigned> used{0};
  pool.Run(count, threads, [&](size_t i, size_t thread) {
    ++hits[i];
    used |= 1u << thread;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::popcount(used.load()) < wait_for &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
  });
  for (int h : hits) EXPECT_EQ(h, 1);
  return used.load();
}

// A loop runs on at most the threads its caller asks for, the caller and
// the workers with the lowest indices, and the pool on at most its
// processors: a pool of 8 on 3 processors starts 2 workers, and its
// tasks' thread indices stay below 3.
TEST(ThreadPool, RunsOnTheThreadsAskedForAndTheProcessorsAtMost) {
  ThreadPool pool(4, 0.0, 0.0, ThreadPool::Start::kNow, 4);
  EXPECT_EQ(pool.parallelism(), 4u);
  EXPECT_EQ(ThreadsUsed(pool, 64, 1, 1), 0b0001u);
  EXPECT_EQ(ThreadsUsed(pool, 64, 2, 2), 0b0011u);
  EXPECT_EQ(ThreadsUsed(pool, 64, 3, 3), 0b0111u);
  EXPECT_EQ(ThreadsUsed(pool, 2, 4, 2), 0b0011u);  // no more threads than tasks
  EXPECT_EQ(ThreadsUsed(pool, 64, 4, 4), 0b1111u);

  ThreadPool wide(8, 0.0, 0.0, ThreadPool::Start::kLater, 3);
  EXPECT_EQ(wide.threads(), 8u);
  EXPECT_EQ(wide.parallelism(), 3u);
  EXPECT_EQ(wide.StartThread(), 2u);
  EXPECT_EQ(wide.StartThread(), 3u);
  EXPECT_EQ(wide.StartThread(), 3u);  // no more: the processors' count runs
  EXPECT_EQ(ThreadsUsed(wide, 64, 8, 3), 0b111u);
}

// The default pool size is the physical cores, 1 to kMaxDefaultThreads,
// and no loop runs on more threads than the processors this process may
// run on.
TEST(ThreadPool, DefaultsFollowTheMachine) {
  const size_t processors = ThreadPool::Processors();
  EXPECT_GE(processors, 1u);
  EXPECT_LE(processors, ThreadPool::HardwareThreads());
  EXPECT_GE(ThreadPool::DefaultThreads(), 1u);
  EXPECT_LE(ThreadPool::DefaultThreads(), std::min(processors, kMaxDefaultThreads));
  EXPECT_EQ(ThreadPool(64).parallelism(), processors);
  EXPECT_EQ(ThreadPool(1).parallelism(), 1u);
}

// The cost model: one thread below min_parallel_ns; else a thread per half
// of it, at most the pool's parallelism and the tasks; up to
// tasks_per_thread tasks per thread of at least min_task_ns each.
using Tasks = std::pair<size_t, size_t>;  // tasks, threads

TEST(SplitWork, ThreadsFromTheWork) {
  const ThreadPool pool(16, kMinParallelNs, kMinTaskNs, ThreadPool::Start::kLater, 16);
  auto split = [&](double ns, size_t max_tasks, size_t per_thread = kTasksPerThread) {
    const Split s = SplitWork(pool, ns, max_tasks, per_thread);
    return Tasks(s.tasks, s.threads);
  };
  EXPECT_EQ(split(kMinParallelNs - 1, 100), Tasks(1, 1));
  EXPECT_EQ(split(1e9, 1), Tasks(1, 1));
  EXPECT_EQ(split(kMinParallelNs, 100), Tasks(3, 2));
  EXPECT_EQ(split(4 * kMinParallelNs, 100), Tasks(15, 8));
  EXPECT_EQ(split(1e9, 100), Tasks(64, 16));
  EXPECT_EQ(split(1e9, 10), Tasks(10, 10));
  EXPECT_EQ(split(1e9, 24, 24), Tasks(24, 16));
  const ThreadPool two(8, kMinParallelNs, kMinTaskNs, ThreadPool::Start::kLater, 2);
  const Split s = SplitWork(two, 1e9, 100);
  EXPECT_EQ(Tasks(s.tasks, s.threads), Tasks(8, 2));
  const ThreadPool one(8, kMinParallelNs, kMinTaskNs, ThreadPool::Start::kLater, 1);
  EXPECT_EQ(SplitWork(one, 1e9, 100).threads, 1u);
}

INSTANTIATE_ON_EVERY_TABLE(Threads);
#else
// A wasm build without threads runs everything on the caller and says so
// when asked for more.
TEST(ThreadPool, ThisBuildRefusesMoreThanOneThread) {
  EXPECT_EQ(ThreadPool::HardwareThreads(), 1u);
  EXPECT_EQ(SharedThreadPool(0)->threads(), 1u);
  EXPECT_TRUE(testing::ThrowsWith<std::invalid_argument>(
      [] { MultiHeadAttention mha(MhaConfig{.d_model = 8, .num_heads = 2, .threads = 2}); },
      {"threads: this build runs on one thread (it was compiled without threads), got 2"}));
  std::vector<int> hits(5, 0);
  ThreadPool(1).Run(5, [&](size_t i, size_t thread) { hits[i] += 1 + int(thread); });
  EXPECT_EQ(hits, std::vector<int>(5, 1));
}
#endif

}  // namespace
}  // namespace simd_attention

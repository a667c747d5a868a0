// The kernels split across a ThreadPool. Every split gives each output
// element to exactly one task, computed with the same tiles and the same
// summation order as one call on one thread: results are bit-identical for
// every thread count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "dispatch/kernel_table.h"
#include "simd_attention/packed_matrix.h"
#include "simd_attention/thread_pool.h"

namespace simd_attention {

// Tasks per thread: enough that dynamic hand-out evens out uneven tasks and
// threads that start late, few enough that each is still long.
constexpr size_t kTasksPerThread = 4;

// How a loop is split: `tasks` tasks on at most `threads` threads.
struct Split {
  size_t tasks, threads;
};

// How to split `work_ns` of work (its estimated time on one thread) into at
// most `max_tasks` tasks: on one thread below the pool's min_parallel_ns;
// else on a thread per half of that (waking a worker and its first cache
// misses cost 5-20 us: S1's projections, ~160 us each by ParallelGemm's
// estimate, wake 10 threads of 16, its attention none), at most the pool's
// parallelism(), with up to tasks_per_thread tasks per thread, each of at
// least min_task_ns.
inline Split SplitWork(const ThreadPool& pool, double work_ns, size_t max_tasks,
                       size_t tasks_per_thread = kTasksPerThread) {
  if (pool.parallelism() == 1 || max_tasks <= 1 || work_ns < pool.min_parallel_ns()) {
    return {1, 1};
  }
  const auto at_most = [](double x) { return x >= 1e18 ? SIZE_MAX : static_cast<size_t>(x); };
  const double per_thread = pool.min_parallel_ns() / 2;
  const size_t by_work = per_thread > 0 ? at_most(work_ns / per_thread) : SIZE_MAX;
  const size_t threads = std::clamp<size_t>(by_work, 2, std::min(pool.parallelism(), max_tasks));
  const size_t by_time = pool.min_task_ns() > 0 ? at_most(work_ns / pool.min_task_ns()) : SIZE_MAX;
  const size_t per_threads = threads * std::min(tasks_per_thread, max_tasks);
  const size_t tasks = std::max<size_t>(1, std::min({max_tasks, per_threads, by_time}));
  return {tasks, std::min(threads, tasks)};
}

// Work run on a task's thread right after each `unit` columns of a GEMM it
// wrote (a multiple of the panel width; 0: all the columns of the task at
// once): m rows of a unit (S2: 128 x 64 floats, 32 KiB) are still in that
// core's L1/L2, so an epilogue such as the rotary embedding or the value
// scan costs no pass over memory. It is given the rows [row0, row1) it may
// touch: all m, unless the GEMM was split by rows too, which ParallelGemm
// does only for an epilogue that is not `whole_rows` (one that needs every
// row of its columns, as the rotary embedding's positions do).
struct GemmEpilogue {
  size_t unit;
  void (*run)(const void* context, size_t row0, size_t row1, size_t col0, size_t col1);
  const void* context;
  bool whole_rows = false;
};

// C = A * packed B (+ bias), split by column panels (with an epilogue: by its
// units, each multiplied and then handed to it), a task each: the units are
// equal work, so handing them out one by one balances the threads to within
// one unit, where kTasksPerThread tasks of whole units did not (S4's 12
// panels made 8 tasks of 1 or 2 on 2 threads, and the last 2-panel task ran
// alone: 7 panel-times instead of 6, the 2-thread S4 forward 6.04 -> 5.61 ms
// with a task per panel). A panel's columns meet the
// same row tiles and K blocks as in one call.
// Where the units are fewer than kTasksPerThread per thread the cost model
// wants (C1's 16 panels of 32 query rows on 16 threads), each unit's rows
// are split too, into parts of whole row tiles (GemmRowParts).
// Estimated time: 2mkn FLOPs at ~50 GFLOP/s plus the packed B from memory at
// ~20 GB/s (a decode step's 1 x 768 x 768 is all weight traffic).
void ParallelGemm(ThreadPool& pool, const KernelTable& kernels, const GemmArgs& g,
                  const GemmEpilogue* then = nullptr);

// The row parts of a GEMM of `row_tiles` whole row tiles of the kernel
// (gemm_tile_rows; the last part also takes the rows past the last whole
// tile) split for `threads` threads over `units` column units, at most
// `max_tasks` tasks in all: 1 unless the units are fewer than
// kTasksPerThread per thread. Parts of whole tiles keep every row in a tile
// of the same kind as in one call, so each element of C sums its K terms in
// the same order (Gemm::Multiply: a tile of 4 rows or more has one FMA chain
// whatever its height; a short last tile holds the same rows in both).
// A decoding step's one row has no whole tile and stays one part.
inline size_t GemmRowParts(size_t row_tiles, size_t units, size_t threads, size_t max_tasks) {
  const size_t wanted = (threads * kTasksPerThread + units - 1) / units;
  return std::max<size_t>(1, std::min({wanted, row_tiles, max_tasks / units}));
}

// c[m, b.cols] (row stride ldc) = a[m, b.rows] (rows of b.rows floats) * the
// whole packed matrix b + its bias: the projections' and the FFN's GEMM.
void ParallelMultiplyPacked(ThreadPool& pool, const KernelTable& kernels, const float* a,
                            size_t m, const PackedMatrix& b, float* c, size_t ldc,
                            const GemmEpilogue* then = nullptr);

// f(begin, end) over [0, n) in split.tasks contiguous ranges of near-equal
// size, on at most split.threads threads.
template <class F>
void ParallelRanges(ThreadPool& pool, size_t n, Split split, const F& f) {
  const size_t tasks = std::max<size_t>(1, std::min(split.tasks, n));
  pool.Run(tasks, split.threads, [&](size_t t, size_t) { f(n * t / tasks, n * (t + 1) / tasks); });
}

// An element-wise kernel f(begin, end) over n floats at ns_per_element,
// split only at multiples of kElementwiseBlock floats: a kernel takes whole
// vectors and finishes with a scalar tail, whose results need not match the
// vector lanes' bit for bit (e.g. the activations' approximations), so every
// element must take the same path whatever the split. 64 floats is a whole
// number of vectors of every target (16 lanes at most) and a cache line's
// multiple.
constexpr size_t kElementwiseBlock = 64;
template <class F>
void ParallelElementwise(ThreadPool& pool, size_t n, double ns_per_element, const F& f) {
  const size_t blocks = (n + kElementwiseBlock - 1) / kElementwiseBlock;
  ParallelRanges(pool, blocks, SplitWork(pool, ns_per_element * double(n), blocks / 16 + 1),
                 [&](size_t b0, size_t b1) {
    f(b0 * kElementwiseBlock, std::min(n, b1 * kElementwiseBlock));
  });
}

// Attention's work items: task(b, h, q0, q1, thread) for batch item b, head
// h and queries [q0, q1), a chunk of whole query blocks. head_ns: one head's
// estimated time on one thread. A head is split into chunks only when there
// are fewer heads than tasks wanted; a chunk starting at q0 shifts the
// causal diagonal by q0 and so computes exactly what the whole head would.
// The last chunks, the most expensive under a causal mask, go out first.
template <class Task>
void ParallelAttention(ThreadPool& pool, size_t batch, size_t heads, size_t tq, double head_ns,
                       const Task& task) {
  const size_t heads_total = batch * heads;
  const size_t query_blocks = (tq + kAttentionQueryBlock - 1) / kAttentionQueryBlock;
  const Split split = SplitWork(pool, head_ns * double(heads_total), heads_total * query_blocks);
  const size_t chunks = std::min(query_blocks, (split.tasks + heads_total - 1) / heads_total);
  pool.Run(heads_total * chunks, split.threads, [&](size_t item, size_t thread) {
    const size_t chunk = chunks - 1 - item / heads_total;
    const size_t q0 = query_blocks * chunk / chunks * kAttentionQueryBlock;
    const size_t q1 = std::min(tq, query_blocks * (chunk + 1) / chunks * kAttentionQueryBlock);
    task(item % heads_total / heads, item % heads, q0, q1, thread);
  });
}

}  // namespace simd_attention

// The kernels read nothing past their buffers. Each input of the attention
// forward and backward and of the GEMM ends exactly where an inaccessible
// page begins, so a read past its end faults, at shapes around the register
// tile, the query and key blocks and the vector width, on every table.
//
// A guard page rather than AddressSanitizer alone: GCC's loop vectorizer
// turned the scalar table's GEMM tile (Gemm::Tile, kL = 1) into code that
// loaded the B row after the last one and dropped it (an 8-byte read past V
// in Attention::Accumulate), and it does not vectorize that loop once ASan
// instruments it, so the read existed only in the uninstrumented -O3 code.
// The page catches it in whichever tree has the instruction. Each table's
// calls run in a death-test child, so a fault fails that test with its signal
// (and the shape it printed last) instead of ending the suite.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <vector>

#include "dispatch/dispatch.h"
#include "dispatch/kernel_table.h"
#include "kernels/weight_packing.h"
#include "random_mha.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// n floats whose last one is the last before a PROT_NONE page.
class GuardedFloats {
 public:
  explicit GuardedFloats(size_t n) : n_(n) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    data_bytes_ = (n * sizeof(float) + page - 1) / page * page;
    bytes_ = data_bytes_ + page;
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) std::abort();
    base_ = static_cast<char*>(p);
    if (mprotect(base_ + data_bytes_, page, PROT_NONE) != 0) std::abort();
  }
  explicit GuardedFloats(const std::vector<float>& values) : GuardedFloats(values.size()) {
    std::copy(values.begin(), values.end(), data());
  }
  GuardedFloats(const GuardedFloats&) = delete;
  GuardedFloats& operator=(const GuardedFloats&) = delete;
  ~GuardedFloats() { munmap(base_, bytes_); }
  float* data() const { return reinterpret_cast<float*>(base_ + data_bytes_) - n_; }
  size_t size() const { return n_; }

 private:
  size_t n_, data_bytes_, bytes_;
  char* base_;
};

std::vector<float> Random(size_t n, std::mt19937& rng) { return RandomVector(n, 1.0f, rng); }

bool AllFinite(const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) return false;
  }
  return true;
}

// Query counts around the GEMM tile (1-3: split-K chains) and the 32-query
// block; key counts around the 64-key block.
const size_t kQueries[] = {1, 2, 3, 4, 5, 7, 9, 33};
const size_t kKeys[] = {1, 3, 13, 65};

// Inputs of one attention problem in guarded buffers, and its forward run:
// z and the softmax statistics written, the backward's inputs.
struct GuardedAttention {
  GuardedAttention(const KernelTable& t, size_t tq, size_t tk, size_t dk, size_t dv, bool causal,
                   std::mt19937& rng)
      : q(Random(tq * dk, rng)), k(Random(tk * dk, rng)), v(Random(tk * dv, rng)), z(tq * dv),
        stats(2 * tq), scratch(t.attention_scratch_floats(dk, dv)) {
    std::fprintf(stderr, "tq %zu tk %zu dk %zu dv %zu\n", tq, tk, dk, dv);
    a = DenseAttentionArgs(q.data(), k.data(), v.data(), z.data(), tq, tk, dk, dv);
    a.scale = 0.5f;
    a.causal = causal;
    a.causal_diagonal = static_cast<ptrdiff_t>(tk) - static_cast<ptrdiff_t>(tq);
    a.softmax_stats = stats.data();
    a.scratch = scratch.data();
    t.attention(a);
  }
  GuardedFloats q, k, v, z, stats, scratch;
  AttentionArgs a{};
};

bool ForwardInBounds(const KernelTable& t, const std::vector<size_t>& widths) {
  std::mt19937 rng(1);
  for (size_t tq : kQueries) for (size_t tk : kKeys) for (size_t dk : widths) {
    for (size_t dv : widths) {
      const GuardedAttention g(t, tq, tk, dk, dv, tq % 2 == 1, rng);
      if (!AllFinite(g.z.data(), g.z.size())) return false;
    }
  }
  return true;
}

bool BackwardInBounds(const KernelTable& t, const std::vector<size_t>& widths) {
  std::mt19937 rng(2);
  for (size_t tq : kQueries) for (size_t tk : kKeys) for (size_t dk : widths) {
    for (size_t dv : widths) {
      GuardedAttention f(t, tq, tk, dk, dv, tq % 2 == 0, rng);
      GuardedFloats d_out(Random(tq * dv, rng)), d_q(tq * dk), d_k(tk * dk), d_v(tk * dv);
      const TrainingKernels& training = TrainingKernelsFor(t);
      GuardedFloats scratch(training.attention_backward_scratch_floats(dk, dv));
      AttentionBackwardArgs b{};
      b.forward = f.a;
      b.forward.scratch = nullptr;
      b.softmax_stats = f.stats.data();
      b.d_out = d_out.data();
      b.ld_d_out = dv;
      b.d_q = d_q.data();
      b.ld_d_q = dk;
      b.d_k = d_k.data();
      b.ld_d_k = dk;
      b.d_v = d_v.data();
      b.ld_d_v = dv;
      b.scratch = scratch.data();
      training.attention_backward(b);
      if (!AllFinite(d_q.data(), d_q.size()) || !AllFinite(d_k.data(), d_k.size()) ||
          !AllFinite(d_v.data(), d_v.size())) {
        return false;
      }
    }
  }
  return true;
}

bool GemmInBounds(const KernelTable& t) {
  std::mt19937 rng(3);
  const size_t tile = t.gemm_tile_rows, panel = t.panel_width;
  for (size_t m : {size_t{1}, size_t{2}, size_t{3}, tile, tile + 1, 2 * tile + 1}) {
    for (size_t k : {size_t{1}, size_t{3}, size_t{17}}) {
      for (size_t n : {size_t{1}, panel, panel + 1}) {
        std::fprintf(stderr, "m %zu k %zu n %zu\n", m, k, n);
        GuardedFloats a(Random(m * k, rng)), packed(PackedFloats(t, k, n)), c(m * n);
        const std::vector<float> w = Random(k * n, rng);
        t.pack_b(w.data(), k, n, packed.data());
        t.gemm({a.data(), k, m, k, packed.data(), k, 0, n, nullptr, c.data(), n});
        if (!AllFinite(c.data(), c.size())) return false;
      }
    }
  }
  return true;
}

// int8 weights through RunGemm, the integer GEMM: its row tiles of kRows,
// two and one rows; odd K and an odd k_begin put half-used K pairs at both
// ends, and K over an int32 chunk makes a second chunk.
// Packed int8 panels are a whole number of floats' bytes (kernels/gemm.h:
// whole K pairs), so a GuardedFloats holds them.
bool Int8GemmInBounds(const KernelTable& t) {
  std::mt19937 rng(5);
  const size_t panel = t.panel_width, tile = t.gemm_tile_rows;
  for (size_t m : std::set<size_t>{1, 2, 3, 4, 5, tile, tile + 1, 2 * tile + 1}) {
    for (size_t rows : {size_t{1}, size_t{3}, size_t{18}, 2 * kInt8ChunkPairs + 3}) {
      for (size_t k_begin : {size_t{0}, size_t{1}}) {
        for (size_t n : {size_t{1}, panel + 1}) {
          if (k_begin >= rows) continue;
          const size_t k = rows - k_begin, panel_rows = PanelRows(WeightType::kInt8, rows);
          std::fprintf(stderr, "int8 m %zu k %zu k_begin %zu n %zu\n", m, k, k_begin, n);
          std::vector<float> q(panel_rows * n), packed(PackedFloats(t, panel_rows, n));
          for (size_t i = 0; i < rows * n; ++i) q[i] = float(int(rng() % 255) - 127);
          t.pack_b(q.data(), panel_rows, n, packed.data());
          InterleaveRowPairs(packed.data(), packed.size(), t.panel_width);
          GuardedFloats a(Random(m * k, rng)), narrow(packed.size() / 4), c(m * n),
              scales(std::vector<float>(PackedFloats(t, 1, n), 0.01f)),
              bias(Random(PackedFloats(t, 1, n), rng));
          NarrowPacked(packed.data(), packed.size(), WeightType::kInt8, narrow.data());
          RunGemm(t, {.a = a.data(), .lda = k, .m = m, .k = k, .packed_b = narrow.data(),
                      .packed_rows = rows, .k_begin = k_begin, .n = n,
                      .packed_bias = bias.data(), .c = c.data(), .ldc = n,
                      .weight_type = WeightType::kInt8, .packed_scales = scales.data()});
          if (!AllFinite(c.data(), c.size())) return false;
        }
      }
    }
  }
  return true;
}

// Each table's calls run in a child, which exits 0 only if every call
// returned finite results; a fault fails the test with its signal and the
// shape the child printed last.
class BufferBounds : public TableTest {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  std::vector<size_t> Widths() const { return {table().lanes, 3 * table().lanes}; }
};

TEST_P(BufferBounds, AttentionForward) {
  EXPECT_EXIT(std::exit(ForwardInBounds(table(), Widths()) ? 0 : 1), ::testing::ExitedWithCode(0), "");
}

TEST_P(BufferBounds, AttentionBackward) {
  EXPECT_EXIT(std::exit(BackwardInBounds(table(), Widths()) ? 0 : 1), ::testing::ExitedWithCode(0), "");
}

TEST_P(BufferBounds, Gemm) {
  EXPECT_EXIT(std::exit(GemmInBounds(table()) ? 0 : 1), ::testing::ExitedWithCode(0), "");
}

TEST_P(BufferBounds, Int8Gemm) {
  EXPECT_EXIT(std::exit(Int8GemmInBounds(table()) ? 0 : 1), ::testing::ExitedWithCode(0), "");
}

INSTANTIATE_ON_EVERY_TABLE(BufferBounds);

}  // namespace
}  // namespace simd_attention::testing

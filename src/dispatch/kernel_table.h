// The kernels one SIMD target provides, as plain function pointers. A table is
// filled by a backend's instantiation file (src/backends) and chosen in one
// place (dispatch.cc); everything above dispatch calls kernels only through it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend.h"
#include "kernels/elementwise.h"

namespace simd_attention {

// C[m, n] = A[m, k] * B[k, n] (+ bias), B given as packed panels (see
// kernels/gemm.h). `k_begin` selects rows k_begin..k_begin+k of the packed B,
// so a head's slice of W_O is multiplied without repacking.
struct GemmArgs {
  const float* a;
  size_t lda;
  size_t m;
  size_t k;
  const float* packed_b;
  size_t packed_rows;  // K of the whole packed matrix (panel height)
  size_t k_begin;
  size_t n;
  const float* packed_bias;  // padded to whole panels; nullptr = no bias
  float* c;
  size_t ldc;
};

// One (batch, head) of softmax(Q K^T * scale + mask) V. Q, K, V rows are
// token-major with the given strides; their head widths are padded to whole
// vectors (kernels/attention.h) and the padding holds zeros.
struct AttentionArgs {
  const float* q;
  size_t ldq;
  const float* k;
  size_t ldk;
  const float* v;
  size_t ldv;
  size_t tq;
  size_t tk;
  size_t dk;  // padded head width of Q and K
  size_t dv;  // padded head width of V and Z
  float scale;
  // Causal: key j visible to query i iff j <= i + causal_diagonal; tk - tq
  // aligns the last query with the last key (bottom-right, as when decoding
  // with a cache). A block of queries starting at row q0 of a larger tq
  // passes tk - tq + q0, and computes exactly what the whole call would.
  bool causal;
  ptrdiff_t causal_diagonal;
  const uint8_t* key_valid;    // [tk], 1 = real token; nullptr = all real
  const float* additive_mask;  // [tq, tk] with row stride mask_ld; or nullptr
  size_t mask_ld;
  float* z;  // [tq, dv] with row stride ldz
  size_t ldz;
  float* probs;  // [tq, tk] row-major; nullptr = not requested
  float* scratch;  // AttentionScratchFloats(...) floats
};

struct KernelTable {
  const char* name;  // "highway:AVX3", "xsimd:avx2", "scalar"
  Backend backend;
  size_t lanes;        // floats per vector
  size_t panel_width;  // columns per packed GEMM panel
  // The GEMM's blocking (kernels/gemm.h): rows of C per register tile, and
  // packed rows of B per K block.
  size_t gemm_tile_rows;
  size_t gemm_k_block;
  // Packs w [k, n] (row-major) into panels; `packed` holds PackedFloats(k, n).
  void (*pack_b)(const float* w, size_t k, size_t n, float* packed);
  void (*gemm)(const GemmArgs& args);
  size_t (*attention_scratch_floats)(size_t dk, size_t dv);
  void (*attention)(const AttentionArgs& args);
  // x[0..n) = act(x), in place.
  void (*activation)(Activation act, float* x, size_t n);
  // out = x + y; out may alias x or y.
  void (*add)(const float* x, const float* y, size_t n, float* out);
  // LayerNorm over each of `rows` rows of width d; out may alias x.
  void (*layer_norm)(const float* x, size_t rows, size_t d, const float* gamma,
                     const float* beta, float eps, float* out);
};

// Floats a packed [k, n] matrix occupies for a table with this panel width.
inline size_t PackedFloats(const KernelTable& t, size_t k, size_t n) {
  const size_t panels = (n + t.panel_width - 1) / t.panel_width;
  return panels * t.panel_width * k;
}

}  // namespace simd_attention

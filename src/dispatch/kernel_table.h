// The kernels one SIMD target provides, as plain function pointers. A table is
// filled by a backend's instantiation file (src/backends) and chosen in one
// place (dispatch.cc); everything above dispatch calls kernels only through it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/attention_backward.h"
#include "kernels/gemm.h"
#include "kernels/optimizer.h"
#include "kernels/int8_gemm.h"
#include "kernels/rope.h"
#include "simd_attention/activation.h"
#include "simd_attention/backend.h"
#include "training/training_module.h"

namespace simd_attention {

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
  // Every weight type; int8 weights in integers (kernels/int8_gemm.h).
  void (*gemm)(const GemmArgs& args);
  // A of an int8 product quantized as `gemm` would (kernels/int8_gemm.h:
  // Int8Words words, m row steps), for the tasks of a split product to share
  // (kernels/int8_activations.h). Null in the training module, which holds
  // no int8 weights (training_module.h).
  void (*int8_quantize)(const GemmArgs& args, int32_t* words, float* row_scales);
  size_t (*attention_scratch_floats)(size_t dk, size_t dv);
  void (*attention)(const AttentionArgs& args);
  // Rotary position embedding of Q or K rows, in place.
  void (*rope)(const RopeArgs& args);
  // x[0..n) = act(x), in place.
  void (*activation)(Activation act, float* x, size_t n);
  // out = x + y; out may alias x or y.
  void (*add)(const float* x, const float* y, size_t n, float* out);
  // LayerNorm over each of `rows` rows of width d; out may alias x.
  void (*layer_norm)(const float* x, size_t rows, size_t d, const float* gamma,
                     const float* beta, float eps, float* out);
  // RMSNorm over each of `rows` rows of width d, row r at x + r * ld (and
  // out + r * ld; out may alias x).
  void (*rms_norm)(const float* x, size_t rows, size_t d, size_t ld, const float* gamma,
                   float eps, float* out);
  // A gated FFN's hidden units: out[r] = act(gate) * up, row r's gate at
  // gate_up + r * ld (activated in place) and its up the n floats after it.
  void (*gated_activation)(Activation act, float* gate_up, size_t rows, size_t n, size_t ld,
                           float* out);
};

// The training kernels of the same target: apart from KernelTable, so that
// a program that never trains (the package's inference builds, whose wasm
// has a size budget) links none of them. TrainingKernelsFor (dispatch.h)
// finds a table's.
struct TrainingKernels {
  size_t (*attention_backward_scratch_floats)(size_t dk, size_t dv);
  void (*attention_backward)(const AttentionBackwardArgs& args);
  // d_x = d_y * act'(x), x the activation's input.
  void (*activation_backward)(Activation act, const float* x, const float* d_y, size_t n,
                              float* d_x);
  // LayerNorm's backward per row of x (the forward's input): d_x, and
  // d_y * xhat (whose column sums are d_gamma) into dy_xhat; no aliasing.
  void (*layer_norm_backward)(const float* x, size_t rows, size_t d, const float* gamma,
                              float eps, const float* d_y, float* d_x, float* dy_xhat);
  // RMSNorm's the same way (gamma: the scales multiplied by, 1 + stored
  // for a kind stored that way), row r of x, d_y, d_x and dy_xhat at r * ld
  // (QK-norm's heads: rows of head_dim, a padded head apart).
  void (*rms_norm_backward)(const float* x, size_t rows, size_t d, size_t ld,
                            const float* gamma, float eps, const float* d_y, float* d_x,
                            float* dy_xhat);
  // RoPE's backward: `rope` by the negative angles, on the gradients of
  // the rotated rows (kernels/rope.h).
  void (*rope_backward)(const RopeArgs& args);
  // The gated product's backward (Elementwise::GatedActivationBackward):
  // d_gate_up, laid out as gate_up, given the forward's gate_up before its
  // activation and d_hidden [rows, n].
  void (*gated_activation_backward)(Activation act, const float* gate_up,
                                    const float* d_hidden, size_t rows, size_t n, size_t ld,
                                    float* d_gate_up);
  // One optimizer step of one parameter, in place, or with check_only
  // which of its results would not be finite (kernels/optimizer.h).
  unsigned (*sgd)(const SgdArgs& args);
  unsigned (*adam)(const AdamArgs& args);
};

// The GEMM for these arguments: the table's one GEMM takes every weight
// type and row count (int8 weights in integers, kernels/int8_gemm.h).
inline void RunGemm(const KernelTable& t, const GemmArgs& g) { t.gemm(g); }

// Floats a packed [k, n] matrix occupies for a table with this panel width.
inline size_t PackedFloats(const KernelTable& t, size_t k, size_t n) {
  const size_t panels = (n + t.panel_width - 1) / t.panel_width;
  return panels * t.panel_width * k;
}

}  // namespace simd_attention

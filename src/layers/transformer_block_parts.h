// TransformerBlock's private parts, shared by its forward
// (transformer_block.cc) and its backward
// (training/transformer_block_backward.cc): a sublayer's objects, and what
// a training forward records of each sublayer for the backward; and what
// TransformerStack's training forward records beside its layers' own.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "layers/gated_feed_forward.h"
#include "layers/mixture_of_experts.h"
#include "layers/norms.h"
#include "simd_attention/transformer_block.h"

namespace simd_attention {

struct TransformerBlock::Part {
  Sublayer sublayer;
  PartNames names;
  BlockNorm norm;
  std::unique_ptr<BlockNorm> output_norm;  // kSandwich
  std::unique_ptr<MultiHeadAttention> attention;
  std::unique_ptr<FeedForward> ffn;
  std::unique_ptr<GatedFeedForward> gated_ffn;
  std::unique_ptr<MixtureOfExperts> moe;
};

// One sublayer of a training forward, passed from the forward to the
// backward (as gemma.cpp's activations): what its norms took and what its
// mixer kept. An attention mixer keeps its own (MultiHeadAttention's
// training forward), as its public Backward needs it.
struct SublayerRecord {
  // The norm's input: the sublayer's input h (pre, sandwich) or the sum
  // h + f(h) it normalized (post).
  std::vector<float> norm_input;
  std::vector<float> output_norm_input;  // kSandwich: the mixer's output
  FfnRecord ffn;                         // a feed-forward mixer's
  MoeRecord moe;                         // a mixture of experts'
};

struct TransformerBlock::Record {
  bool ready = false;          // a training forward since the weights last changed
  bool has_gradients = false;  // a complete Backward since then
  size_t batch = 0, tokens = 0;
  std::vector<SublayerRecord> sublayers;
};

// A stack's training forward: each layer keeps its own record, so the
// stack keeps only what its final norm took.
struct TransformerStack::Record {
  bool ready = false;          // a training forward since the weights last changed
  bool has_gradients = false;  // a complete Backward since then
  size_t batch = 0, tokens = 0;
  std::vector<float> final_norm_input;  // config.final_norm: the last layer's output
};

}  // namespace simd_attention

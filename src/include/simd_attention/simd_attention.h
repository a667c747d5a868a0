// The whole public C++ API. Link the CMake target simd_attention; this
// folder (src/include) is its only public include directory.
#pragma once

#include "simd_attention/activation.h"
#include "simd_attention/arg_names.h"
#include "simd_attention/backend.h"
#include "simd_attention/causal_alignment.h"
#include "simd_attention/errors.h"
#include "simd_attention/kv_cache.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/norm_kind.h"
#include "simd_attention/optimizers.h"
#include "simd_attention/pytorch_weights.h"
#include "simd_attention/scaled_dot_product_attention.h"
#include "simd_attention/tensor.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/tiny_model.h"
#include "simd_attention/trainable.h"
#include "simd_attention/transformer_block.h"
#include "simd_attention/transformer_layers.h"

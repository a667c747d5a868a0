// Which scores an attention returns when asked for them: the stages the
// scores pass through on their way to the softmax.
#pragma once

#include "simd_attention/traits_table.h"

namespace simd_attention {

// scale * q . k, then soft-capped, then masked: the three are ONNX
// Attention's qk_matmul_output modes 0 (the scaled QK^T), 1 (soft-capped)
// and 2 (soft-capped and masked; mode 3, the softmax, is the weights).
enum class ScoresStage {
  kScaled,  // scale * q . k, for every key, masked or not
  kCapped,  // softcap * tanh(scaled / softcap) (the scaled scores without a
            // softcap), for every key
  kMasked,  // what the softmax takes: capped plus the additive mask, -inf
            // where any mask hides the key
};

using ScoresStageTraits = NamedValue<ScoresStage>;

// options.returnScores's strings in JavaScript.
inline constexpr ScoresStageTraits kScoresStages[] = {
    {ScoresStage::kScaled, "scaled"},
    {ScoresStage::kCapped, "capped"},
    {ScoresStage::kMasked, "masked"},
};

static_assert(RowsAreExactly(kScoresStages,
                             {ScoresStage::kScaled, ScoresStage::kCapped, ScoresStage::kMasked}),
              "kScoresStages: one row per stage and name");

}  // namespace simd_attention

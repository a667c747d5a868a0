// libFuzzer target over the public C++ API with sizes that may be huge.
//
// Each input is a small program: a config (dimensions usually small, now and
// then 2^35 or more, so that their products wrap size_t or exceed memory),
// then calls with lengths that may or may not match their shapes. Every call
// may throw a std::exception (that is the API's answer to bad input); what
// the fuzzer looks for is anything else: a crash, an ASan/UBSan report, a
// leak, or a NaN in a result of finite inputs. Dimensions are either <= 64
// or >= 2^35: in between a valid request of several GiB would be allocated
// for real, which says nothing about the checks and trips libFuzzer's memory
// limit. Build: scripts/build.sh fuzz; run: scripts/fuzz.sh [seconds].
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <vector>

#include "simd_attention/multi_head_attention.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention {
namespace {

size_t Dim(FuzzedDataProvider& in) {
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) {
    return size_t{1} << in.ConsumeIntegralInRange<int>(35, 63);
  }
  return in.ConsumeIntegralInRange<size_t>(0, 64);
}

// `n` floats, bounded so that one input never allocates much; values in
// [-scale, scale] with scale drawn over many magnitudes.
std::vector<float> Floats(FuzzedDataProvider& in, size_t n) {
  const size_t length = std::min<size_t>(n, 1 << 14);
  const float scale = std::ldexp(1.0f, in.ConsumeIntegralInRange<int>(-8, 126));
  std::vector<float> v(length);
  for (float& x : v) x = in.ConsumeFloatingPointInRange<float>(-1.0f, 1.0f) * scale;
  return v;
}

// A length that usually matches the shape and sometimes is off by one.
size_t Length(FuzzedDataProvider& in, std::initializer_list<size_t> shape) {
  uint64_t n = 1;
  for (const size_t d : shape) {
    if (__builtin_mul_overflow(n, uint64_t{d}, &n)) n = 1 << 15;
  }
  if (n > (1 << 14)) n = in.ConsumeIntegralInRange<size_t>(0, 1 << 14);
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return n + 1;
    case 1: return n > 0 ? n - 1 : 0;
    default: return n;
  }
}

void ExpectFinite(const std::vector<float>& v) {
  for (const float x : v) {
    if (!std::isfinite(x)) std::abort();  // the contract: refuse, never NaN
  }
}

struct Tensor {
  std::vector<float> data;
  Tensor3 view;
};

Tensor MakeTensor(FuzzedDataProvider& in, size_t features) {
  const size_t batch = in.ConsumeIntegralInRange<size_t>(0, 3);
  const size_t tokens = in.ConsumeIntegralInRange<size_t>(0, 9);
  Tensor t{Floats(in, Length(in, {batch, tokens, features})), {}};
  t.view = Tensor3{t.data, batch, tokens, features};
  return t;
}

void RunAttention(FuzzedDataProvider& in) {
  MhaConfig c;
  c.d_model = Dim(in);
  c.num_heads = Dim(in);
  if (in.ConsumeBool()) c.kdim = Dim(in);
  if (in.ConsumeBool()) c.vdim = Dim(in);
  if (in.ConsumeBool()) c.head_dim_v = Dim(in);
  c.bias = in.ConsumeBool();
  MultiHeadAttention mha(c);  // may throw: then this input is done
  const MhaConfig& r = mha.config();
  const size_t hk = r.d_model, hv = r.num_heads * r.head_dim_v;
  std::vector<float> w_q = Floats(in, Length(in, {r.d_model, hk}));
  std::vector<float> w_k = Floats(in, Length(in, {r.kdim, hk}));
  std::vector<float> w_v = Floats(in, Length(in, {r.vdim, hv}));
  std::vector<float> w_o = Floats(in, Length(in, {hv, r.d_model}));
  std::vector<float> b_q, b_k, b_v, b_o;
  if (r.bias) {
    b_q = Floats(in, Length(in, {hk}));
    b_k = Floats(in, Length(in, {hk}));
    b_v = Floats(in, Length(in, {hv}));
    b_o = Floats(in, Length(in, {r.d_model}));
  }
  mha.SetWeights({w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o});
  while (in.remaining_bytes() > 0) {
    try {
      switch (in.ConsumeIntegralInRange<int>(0, 4)) {
        case 0: {
          const Tensor q = MakeTensor(in, r.d_model);
          MhaOptions o;
          o.causal = in.ConsumeBool();
          o.need_weights = in.ConsumeBool();
          o.need_per_head_output = in.ConsumeBool();
          o.need_intermediates = in.ConsumeBool();
          const MhaResult result = mha.Forward(q.view, o);
          ExpectFinite(result.output);
          ExpectFinite(result.attn_weights);
          break;
        }
        case 1: {
          const Tensor q = MakeTensor(in, r.d_model);
          const Tensor k = MakeTensor(in, r.kdim);
          const Tensor v = MakeTensor(in, r.vdim);
          std::vector<uint8_t> padding(Length(in, {q.view.batch, k.view.tokens}));
          for (uint8_t& p : padding) p = in.ConsumeBool();
          MhaOptions o;
          o.key_padding_mask = padding;
          ExpectFinite(mha.Forward(q.view, k.view, v.view, o).output);
          break;
        }
        case 2: {
          KVCache cache = mha.CreateKVCache(Dim(in), Dim(in));
          for (int step = in.ConsumeIntegralInRange<int>(0, 4); step > 0; --step) {
            const Tensor x = MakeTensor(in, r.d_model);
            ExpectFinite(mha.ForwardIncremental(x.view, cache).output);
          }
          break;
        }
        case 3: {
          const Tensor m = MakeTensor(in, r.kdim);
          const PrecomputedKV kv = mha.PrecomputeKeyValue(m.view);
          const Tensor q = MakeTensor(in, r.d_model);
          ExpectFinite(mha.Forward(q.view, kv).output);
          break;
        }
        case 4:
          ExpectFinite(PositionalEncoding(Dim(in), Dim(in)));
          break;
      }
    } catch (const std::exception&) {
      // Refused: the object must go on working, which the next call tests.
    }
  }
}

void RunLayers(FuzzedDataProvider& in) {
  LayerConfig c;
  c.d_model = Dim(in);
  c.num_heads = Dim(in);
  c.ffn_dim = Dim(in);
  c.norm_first = in.ConsumeBool();
  c.eps = in.ConsumeFloatingPoint<float>();
  TransformerDecoderLayer layer(c);
  const size_t d = c.d_model, f = c.ffn_dim;
  auto attention = [&](std::vector<std::vector<float>>& own) {
    own.clear();
    for (const size_t n : {Length(in, {d, d}), Length(in, {d, d}), Length(in, {d, d}),
                           Length(in, {d, d}), Length(in, {d}), Length(in, {d}),
                           Length(in, {d}), Length(in, {d})}) {
      own.push_back(Floats(in, n));
    }
    return MhaWeights{own[0], own[1], own[2], own[3], own[4], own[5], own[6], own[7]};
  };
  std::vector<std::vector<float>> self_own, cross_own;
  const MhaWeights self = attention(self_own), cross = attention(cross_own);
  const std::vector<float> w1 = Floats(in, Length(in, {d, f})), b1 = Floats(in, Length(in, {f}));
  const std::vector<float> w2 = Floats(in, Length(in, {f, d})), b2 = Floats(in, Length(in, {d}));
  const std::vector<float> g = Floats(in, Length(in, {d})), b = Floats(in, Length(in, {d}));
  layer.SetWeights(self, cross, {w1, b1, w2, b2}, {g, b}, {g, b}, {g, b});
  while (in.remaining_bytes() > 0) {
    try {
      const Tensor x = MakeTensor(in, d);
      const Tensor m = MakeTensor(in, d);
      ExpectFinite(layer.Forward(x.view, m.view));
      KVCache cache = layer.self_attention().CreateKVCache(Dim(in), Dim(in));
      const PrecomputedKV kv = layer.cross_attention().PrecomputeKeyValue(m.view);
      ExpectFinite(layer.ForwardIncremental(x.view, cache, kv));
      ExpectFinite(LayerNormForward(x.view, {g, b}, in.ConsumeFloatingPoint<double>(),
                                    layer.self_attention().kernels()));
    } catch (const std::exception&) {
    }
  }
}

}  // namespace
}  // namespace simd_attention

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  try {
    if (in.ConsumeBool()) {
      simd_attention::RunAttention(in);
    } else {
      simd_attention::RunLayers(in);
    }
  } catch (const std::exception&) {
  }
  return 0;
}

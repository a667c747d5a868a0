// Embind class behind MultiHeadAttention of web/index.js. The JS layer has
// already checked types (Float32Array, integers, booleans) and normalised
// shapes to {data, batch, tokens, features}; shapes and values are checked
// here by the C++ API, whose messages reach JS unchanged (see glue.h).
#include <emscripten/bind.h>

#include <memory>
#include <string>

#include "glue.h"
#include "multi_head_attention.h"
#include "pytorch_weights.h"

namespace simd_attention::bindings {
namespace {

MhaConfig ConfigFromJs(const val& js) {
  MhaConfig c;
  c.d_model = SizeOf(js, "dModel");
  c.num_heads = SizeOf(js, "numHeads");
  c.kdim = SizeOf(js, "kDim");
  c.vdim = SizeOf(js, "vDim");
  c.head_dim_v = SizeOf(js, "headDimV");
  c.bias = js["bias"].as<bool>();
  c.backend = ParseBackend(js["backend"].as<std::string>());
  return c;
}

// A copied input tensor: owns its data, views it as a Tensor3.
struct Input {
  std::vector<float> data;
  Tensor3 tensor;
  explicit Input(const val& js)
      : data(CopyFloats(js["data"])),
        tensor{data, SizeOf(js, "batch"), SizeOf(js, "tokens"),
               SizeOf(js, "features")} {}
};

}  // namespace

class MhaBinding {
 public:
  // Never throws (an Embind constructor must not): a failure is kept and
  // handed to JS by takeError(), which then deletes this object.
  explicit MhaBinding(const val& config) {
    error_ = Guard([&] {
      mha_ = std::make_unique<MultiHeadAttention>(ConfigFromJs(config));
      return val::null();
    });
  }

  val takeError() {
    val e = error_;
    error_ = val::null();
    return e;
  }

  // The resolved config and the kernels in use.
  val info() const {
    return Guard([&] {
      const MhaConfig& c = Checked().config();
      val v = val::object();
      v.set("dModel", c.d_model);
      v.set("numHeads", c.num_heads);
      v.set("kDim", c.kdim);
      v.set("vDim", c.vdim);
      v.set("headDim", mha_->head_dim());
      v.set("headDimV", c.head_dim_v);
      v.set("bias", c.bias);
      v.set("backend", std::string(BackendName(c.backend)));
      v.set("kernels", std::string(mha_->kernels().name));
      return v;
    });
  }

  val setWeights(const val& w) {
    return Guard([&] {
      MultiHeadAttention& mha = Checked();
      const std::vector<float> w_q = CopyFloats(w["wQ"]);
      const std::vector<float> w_k = CopyFloats(w["wK"]);
      const std::vector<float> w_v = CopyFloats(w["wV"]);
      const std::vector<float> w_o = CopyFloats(w["wO"]);
      const std::vector<float> b_q = CopyFloatsIfGiven(w, "bQ");
      const std::vector<float> b_k = CopyFloatsIfGiven(w, "bK");
      const std::vector<float> b_v = CopyFloatsIfGiven(w, "bV");
      const std::vector<float> b_o = CopyFloatsIfGiven(w, "bO");
      mha.SetWeights(MhaWeights{w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o});
      return val::undefined();
    });
  }

  // `state` uses the state_dict names with '.' replaced by '_'
  // (out_proj_weight, out_proj_bias); web/index.js normalises the keys.
  val setWeightsFromPyTorch(const val& state) {
    return Guard([&] {
      MultiHeadAttention& mha = Checked();
      TorchMhaState s;
      auto take = [&](const char* key, std::optional<std::vector<float>>& to) {
        const val v = state[key];
        if (Given(v)) to = CopyFloats(v);
      };
      take("in_proj_weight", s.in_proj_weight);
      take("q_proj_weight", s.q_proj_weight);
      take("k_proj_weight", s.k_proj_weight);
      take("v_proj_weight", s.v_proj_weight);
      take("in_proj_bias", s.in_proj_bias);
      take("out_proj_weight", s.out_proj_weight);
      take("out_proj_bias", s.out_proj_bias);
      const OwnedMhaWeights w = FromTorchState(mha.config(), s);
      mha.SetWeights(w.weights());
      return val::undefined();
    });
  }

  // key undefined: self-attention; value undefined: value = key. Each input
  // is copied into the heap once.
  val forward(const val& query, const val& key, const val& value,
              const val& options) {
    return Guard([&] {
      MultiHeadAttention& mha = Checked();
      MhaOptions o;
      o.causal = options["causal"].as<bool>();
      o.need_weights = options["needWeights"].as<bool>();
      o.need_per_head_output = options["needPerHeadOutput"].as<bool>();
      std::vector<uint8_t> key_padding_mask;
      if (Given(options["keyPaddingMask"])) {
        key_padding_mask = CopyBytes(options["keyPaddingMask"]);
        o.key_padding_mask = key_padding_mask;
      }
      std::vector<float> attn_mask;
      if (Given(options["attnMask"])) {
        attn_mask = CopyFloats(options["attnMask"]);
        o.attn_mask = attn_mask;
      }

      const Input q(query);
      MhaResult r;
      if (!Given(key)) {
        r = mha.Forward(q.tensor, o);
      } else {
        const Input k(key);
        if (!Given(value)) {
          r = mha.Forward(q.tensor, k.tensor, k.tensor, o);
        } else {
          const Input v(value);
          r = mha.Forward(q.tensor, k.tensor, v.tensor, o);
        }
      }

      val out = val::object();
      out.set("batch", r.batch);
      out.set("tq", r.tq);
      out.set("tk", r.tk);
      out.set("output", ToFloat32Array(r.output));
      if (o.need_weights) out.set("attnWeights", ToFloat32Array(r.attn_weights));
      if (o.need_per_head_output) {
        out.set("perHeadOutput", ToFloat32Array(r.per_head_output));
      }
      return out;
    });
  }

 private:
  MultiHeadAttention& Checked() const {
    if (!mha_) throw std::logic_error("MultiHeadAttention: not constructed");
    return *mha_;
  }

  std::unique_ptr<MultiHeadAttention> mha_;
  val error_ = val::null();
};

EMSCRIPTEN_BINDINGS(simd_attention_mha) {
  emscripten::class_<MhaBinding>("MhaBinding")
      .constructor<const val&>()
      .function("takeError", &MhaBinding::takeError)
      .function("info", &MhaBinding::info)
      .function("setWeights", &MhaBinding::setWeights)
      .function("setWeightsFromPyTorch", &MhaBinding::setWeightsFromPyTorch)
      .function("forward", &MhaBinding::forward);
}

}  // namespace simd_attention::bindings

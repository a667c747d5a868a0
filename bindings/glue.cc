#include "glue.h"

#include "js_arg_names.h"
#include "checked_size.h"
#include "validate.h"

namespace simd_attention::bindings {

val ErrorValue(const char* kind, const std::string& message) {
  val error = val::object();
  error.set("saError", val(kind));
  error.set("message", val(message));
  return error;
}

val GuardCall(val (*call)(void* body), void* body) {
  try {
    return call(body);
  } catch (const std::invalid_argument& e) {
    return ErrorValue("invalid_argument", e.what());
  } catch (const std::length_error& e) {  // SizeLimitError, a full KV cache
    return ErrorValue("invalid_argument", e.what());
  } catch (const std::range_error& e) {  // float32 overflow of valid inputs
    return ErrorValue("invalid_argument", e.what());
  } catch (const std::bad_alloc& e) {
    return ErrorValue("out_of_memory", e.what());
  } catch (const std::logic_error& e) {
    return ErrorValue("logic_error", e.what());
  } catch (const std::exception& e) {
    return ErrorValue("error", e.what());
  } catch (...) {
    return ErrorValue("error", "unknown C++ exception");
  }
}

namespace {

template <typename T>
std::vector<T> CopyArray(const val& array) {
  const size_t length = array["length"].as<size_t>();
  std::vector<T> out(length);  // may throw std::bad_alloc: heap cannot grow
  if (length != 0) {
    // The view is made after the allocation, so heap growth cannot detach it.
    val(emscripten::typed_memory_view(length, out.data()))
        .call<void>("set", array);
  }
  return out;
}

}  // namespace

std::unique_ptr<float[]> CopyFloatsUninitialized(const val& array, size_t length) {
  // new float[n] leaves the floats uninitialised (std::vector<float>(n) would
  // zero them one by one at -Os); may throw std::bad_alloc.
  std::unique_ptr<float[]> out(new float[length]);
  if (length != 0) {
    val(emscripten::typed_memory_view(length, out.get())).call<void>("set", array);
  }
  return out;
}

std::vector<float> CopyFloats(const val& array) {
  return CopyArray<float>(array);
}

std::vector<uint8_t> CopyBytes(const val& array) {
  return CopyArray<uint8_t>(array);
}

std::vector<int32_t> CopyInts(const val& array) {
  return CopyArray<int32_t>(array);
}

std::vector<float> CopyFloatsIfGiven(const val& object, const char* key) {
  const val v = object[key];
  return Given(v) ? CopyFloats(v) : std::vector<float>{};
}

std::vector<uint8_t> CopyBytesIfGiven(const val& object, const char* key) {
  const val v = object[key];
  return Given(v) ? CopyBytes(v) : std::vector<uint8_t>{};
}

RopeConfig RopeFromJs(const val& js) {
  RopeConfig rope;
  if (!Given(js)) return rope;
  rope.style = js["style"].as<std::string>() == "half" ? RopeStyle::kHalf : RopeStyle::kInterleaved;
  rope.base = js["base"].as<double>();
  rope.rotary_dim = SizeOf(js, "rotaryDim");
  return rope;
}

val RopeToJs(const RopeConfig& rope, size_t head_dim) {
  if (rope.style == RopeStyle::kNone) return val::undefined();
  val v = val::object();
  v.set("style", std::string(rope.style == RopeStyle::kHalf ? "half" : "interleaved"));
  v.set("base", rope.base);
  v.set("rotaryDim", rope.rotary_dim == 0 ? head_dim : rope.rotary_dim);
  return v;
}

CausalAlignment ParseCausal(const std::string& causal) {
  if (causal == "none") return CausalAlignment::kNone;
  if (causal == "top-left") return CausalAlignment::kTopLeft;
  if (causal == "bottom-right") return CausalAlignment::kBottomRight;
  throw std::invalid_argument(JsArgNames().causal + std::string(
      ": expected 'none', 'top-left' or 'bottom-right', got '") + causal + "'");
}

WeightType ParseWeightType(const std::string& name, bool cache) {
  const int types = cache ? 3 : 4;  // caches hold no int8
  std::string expected;
  for (int t = 0; t < types; ++t) {
    const char* type_name = WeightTypeName(static_cast<WeightType>(t));
    if (name == type_name) return static_cast<WeightType>(t);
    expected += Cat({t == 0 ? "'" : t == types - 1 ? " or '" : ", '", type_name, "'"});
  }
  const ArgNames& n = JsArgNames();
  throw std::invalid_argument(Cat({ConfigName(cache ? n.cache_type : n.weights), ": expected ",
                                   expected, ", got '", name, "'"}));
}

const char* WeightTypeName(WeightType type) {
  constexpr const char* kNames[] = {"f32", "f16", "bf16", "int8"};
  return kNames[static_cast<int>(type)];
}

std::vector<double> Integers(const std::string& name, const val& array, double min) {
  std::vector<double> out(array["length"].as<size_t>());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = array[i].as<double>();
    if (!(out[i] >= min && out[i] < 9007199254740992.0)) {
      throw std::invalid_argument(name + "[" + std::to_string(i) + "]: expected an integer in [" +
                                  NumberString(min) + ", 2^53), got " + NumberString(out[i]));
    }
  }
  return out;
}

std::vector<size_t> Sizes(const std::string& name, const val& array) {
  const std::vector<double> numbers = Integers(name, array, 0);
  return std::vector<size_t>(numbers.begin(), numbers.end());
}

namespace {

std::vector<size_t> SizesIfGiven(const char* name, const val& object, const char* key) {
  const val v = object[key];
  return Given(v) ? Sizes(name, v) : std::vector<size_t>{};
}

}  // namespace

JsAttentionOptions::JsAttentionOptions(const val& js)
    : attn_mask(CopyFloatsIfGiven(js, "attnMask")),
      bool_mask(CopyBytesIfGiven(js, "boolMask")),
      key_padding_mask(CopyBytesIfGiven(js, "keyPaddingMask")) {
  const ArgNames& n = JsArgNames();
  attn_mask_shape = SizesIfGiven(n.attn_mask_shape, js, "attnMaskShape");
  bool_mask_shape = SizesIfGiven(n.bool_mask_shape, js, "boolMaskShape");
  kv_lengths = SizesIfGiven(n.kv_lengths, js, "kvLengths");
  if (Given(js["window"])) {
    const std::vector<double> w = Integers(n.window, js["window"], -9007199254740991.0);
    window = {static_cast<int64_t>(w[0]), static_cast<int64_t>(w[1])};
  }
  if (Given(js["scale"])) scale = js["scale"].as<double>();
  if (Given(js["softcap"])) softcap = js["softcap"].as<double>();
  need_weights = Given(js["returnAttnWeights"]) && js["returnAttnWeights"].as<bool>();
  need_scores = Given(js["returnScores"]) && js["returnScores"].as<bool>();
}

JsMhaOptions::JsMhaOptions(const val& js) : shared(js) {
  // true: bottom-right, as before alignments could be named.
  const val causal = js["causal"];
  if (causal.isString()) {
    options.causal_alignment = ParseCausal(causal.as<std::string>());
    options.causal = options.causal_alignment != CausalAlignment::kNone;
  } else {
    options.causal = causal.as<bool>();
  }
  shared.SetOn(options);
  options.need_per_head_output = js["returnPerHeadOutput"].as<bool>();
  options.need_intermediates = js["returnIntermediates"].as<bool>();
  options.position_offset = SizeOf(js, "positionOffset");
  options.training = js["training"].as<bool>();
}

JsMatrix::JsMatrix(const val& js) {
  if (Given(js["scales"])) {
    bytes = CopyBytes(js["values"]);
    scales = CopyFloats(js["scales"]);
  } else if (Given(js["bits"])) {
    bytes = CopyBytes(js["bits"]);
    bits = true;
  } else {
    floats = CopyFloats(js);
  }
}

JsMhaWeights::JsMhaWeights(const val& js)
    : w_q(js["wQ"]), w_k(js["wK"]), w_v(js["wV"]), w_o(js["wO"]),
      b_q(CopyFloatsIfGiven(js, "bQ")), b_k(CopyFloatsIfGiven(js, "bK")),
      b_v(CopyFloatsIfGiven(js, "bV")), b_o(CopyFloatsIfGiven(js, "bO")),
      weights{w_q.floats, w_k.floats, w_v.floats, w_o.floats, b_q, b_k, b_v, b_o,
              w_q.stored(), w_k.stored(), w_v.stored(), w_o.stored()} {}

namespace {

// A fresh Float32Array copy of `data`, whose storage is then freed.
val TakeFloat32Array(std::vector<float>& data) {
  val array = ToFloat32Array(data);
  FreeFloats(data);
  return array;
}

}  // namespace

val ResultToJs(MhaResult&& r, const MhaOptions& o) {
  val out = val::object();
  out.set("batch", r.batch);
  out.set("tq", r.tq);
  out.set("tk", r.tk);
  out.set("output", TakeFloat32Array(r.output));
  if (o.need_weights) out.set("attnWeights", TakeFloat32Array(r.attn_weights));
  if (o.need_scores) out.set("scores", TakeFloat32Array(r.scores));
  if (o.need_per_head_output) out.set("perHeadOutput", TakeFloat32Array(r.per_head_output));
  if (o.need_intermediates) {
    out.set("q", TakeFloat32Array(r.q));
    out.set("k", TakeFloat32Array(r.k));
    out.set("v", TakeFloat32Array(r.v));
    out.set("headOutput", TakeFloat32Array(r.head_output));
  }
  return out;
}

val ToFloat32Array(const std::vector<float>& data) {
  // new Float32Array(view) copies the view's elements into a new buffer.
  return val::global("Float32Array")
      .new_(emscripten::typed_memory_view(data.size(), data.data()));
}

void ThrowNotConstructed(const char* kind) {
  throw std::logic_error(std::string(kind) + ": not constructed");
}

size_t SizeOf(const val& object, const char* key) {
  return static_cast<size_t>(object[key].as<double>());
}

Activation ParseActivation(const std::string& name) {
  if (name == "relu") return Activation::kRelu;
  if (name == "gelu" || name == "gelu_erf") return Activation::kGeluErf;
  if (name == "gelu_tanh") return Activation::kGeluTanh;
  throw std::invalid_argument(
      "config.activation: expected 'relu', 'gelu' (or 'gelu_erf') or "
      "'gelu_tanh', got '" +
      name + "'");
}

const char* ActivationName(Activation a) {
  switch (a) {
    case Activation::kRelu:
      return "relu";
    case Activation::kGeluErf:
      return "gelu";
    case Activation::kGeluTanh:
      return "gelu_tanh";
  }
  return "?";
}

}  // namespace simd_attention::bindings

#include "glue.h"

#include "js_arg_names.h"
#include "checks/checked_size.h"
#include "checks/validate.h"

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
  ReadField(js, "base", rope.base);
  ReadField(js, "rotaryDim", rope.rotary_dim);
  return rope;
}

CausalAlignment ParseCausal(const std::string& causal) {
  if (const CausalAlignmentTraits* row = RowNamed(kCausalAlignments, causal)) return row->value;
  static constexpr ChoiceList kChoices =
      ChoicesOf(kCausalAlignments, &CausalAlignmentTraits::name, true);
  throw std::invalid_argument(
      Cat({JsArgNames().causal, ": expected ", kChoices.view(), ", got '", causal, "'"}));
}

void ReadCausal(const val& causal, bool& on, CausalAlignment& alignment) {
  if (causal.isString()) {
    alignment = ParseCausal(causal.as<std::string>());
    on = alignment != CausalAlignment::kNone;
  } else {
    on = causal.as<bool>();
  }
}

WeightType ParseWeightType(const std::string& name, bool cache) {
  const WeightTypeTraits* row = RowNamed(kWeightTypes, name);
  if (row != nullptr && (row->in_caches || !cache)) return row->value;
  static constexpr ChoiceList kChoices = ChoicesOf(kWeightTypes, &WeightTypeTraits::name, true);
  const ArgNames& n = JsArgNames();
  throw std::invalid_argument(
      Cat({ConfigName(cache ? n.cache_type : n.weights), ": expected ",
           (cache ? kJsCacheTypeChoices : kChoices).view(), ", got '", name, "'"}));
}

const char* WeightTypeName(WeightType type) { return Traits(type).name; }

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

JsAttentionOptions::JsAttentionOptions(const val& js) {
  if (!Given(js)) return;
  attn_mask = CopyFloatsIfGiven(js, "attnMask");
  bool_mask = CopyBytesIfGiven(js, "boolMask");
  key_padding_mask = CopyBytesIfGiven(js, "keyPaddingMask");
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
  if (Given(js["queryOffset"])) {
    const std::vector<double> offsets =
        Integers(n.query_offset, js["queryOffset"], -9007199254740991.0);
    query_offset.assign(offsets.begin(), offsets.end());
  }
  // options.returnScores's name (JS passes true as returnScores alone).
  if (Given(js["scoresStage"])) {
    const std::string name = js["scoresStage"].as<std::string>();
    const ScoresStageTraits* row = RowNamed(kScoresStages, name);
    static constexpr ChoiceList kChoices =
        ChoicesOf(kScoresStages, &ScoresStageTraits::name, true);
    if (row == nullptr) {
      ThrowInvalidArgument({"options.returnScores: expected a boolean or ", kChoices.view(),
                            ", got '", name, "'"});
    }
    scores_stage = row->value;
  }
}

JsMatrix::JsMatrix(const val& js) {
  if (Given(js["scales"])) {
    bytes = CopyBytes(js["values"]);
    scales = CopyFloats(js["scales"]);
    form = Form::kInt8;
  } else if (Given(js["bits"])) {
    bytes = CopyBytes(js["bits"]);
    form = Form::kBits;
  } else if (Given(js["q4"])) {
    bytes = CopyBytes(js["q4"]);
    form = Form::kQ4;
  } else {
    floats = CopyFloats(js);
  }
}

StoredMatrix JsMatrix::stored() const {
  StoredMatrix s;
  if (form == Form::kBits) {
    s.bits = {reinterpret_cast<const uint16_t*>(bytes.data()), bytes.size() / 2};
  } else if (form == Form::kQ4) {
    s.q4 = bytes;
  } else if (form == Form::kInt8) {
    s.values = {reinterpret_cast<const int8_t*>(bytes.data()), bytes.size()};
    s.scales = scales;
  }
  return s;
}

JsMhaWeights::JsMhaWeights(const val& js)
    : w_q(js["wQ"]), w_k(js["wK"]), w_v(js["wV"]), w_o(js["wO"]),
      b_q(CopyFloatsIfGiven(js, "bQ")), b_k(CopyFloatsIfGiven(js, "bK")),
      b_v(CopyFloatsIfGiven(js, "bV")), b_o(CopyFloatsIfGiven(js, "bO")),
      q_norm(CopyFloatsIfGiven(js, "qNorm")), k_norm(CopyFloatsIfGiven(js, "kNorm")),
      weights{w_q.floats, w_k.floats, w_v.floats, w_o.floats, b_q, b_k, b_v, b_o,
              w_q.stored(), w_k.stored(), w_v.stored(), w_o.stored(), q_norm, k_norm} {}

val TakeFloat32Array(std::vector<float>& data) {
  val array = ToFloat32Array(data);
  FreeFloats(data);
  return array;
}

val SizesToJs(std::initializer_list<NamedSize> sizes) {
  val out = val::object();
  for (const NamedSize& s : sizes) out.set(s.key, s.size);
  return out;
}

val ResultToJs(MhaResult&& r, const MhaOptions& o) {
  val out = SizesToJs({{"batch", r.batch}, {"tq", r.tq}, {"tk", r.tk}});
  SetAttentionArrays(out, r, o);
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

void ReadField(const val& js, const char* key, size_t& field) {
  const val v = js[key];
  if (Given(v)) field = static_cast<size_t>(v.as<double>());
}

void ReadField(const val& js, const char* key, double& field) {
  const val v = js[key];
  if (Given(v)) field = v.as<double>();
}

void ReadField(const val& js, const char* key, bool& field) {
  const val v = js[key];
  if (Given(v)) field = v.as<bool>();
}

void ReadField(const val& js, const char* key, Activation& field) {
  const val v = js[key];
  if (Given(v)) field = ParseActivation(v.as<std::string>());
}

void ReadField(const val& js, const char* key, Backend& field) {
  const val v = js[key];
  if (Given(v)) field = ParseBackend(v.as<std::string>());
}

void ReadField(const val& js, const char* key, WeightType& field) {
  const val v = js[key];
  if (Given(v)) field = ParseWeightType(v.as<std::string>(), key == kCacheTypeKey);
}

void ReadField(const val& js, const char* key, RopeConfig& field) {
  const val v = js[key];
  if (Given(v)) field = RopeFromJs(v);
}

void AddKernels(const InfoFields& info, size_t head_dim, const KernelTable& kernels) {
  info("headDim", head_dim);
  const KernelsInfo k = DescribeKernels(kernels);
  info("backend", BackendName(k.backend));
  info("kernels", k.name);
}

void InfoFields::operator()(const char* key, size_t field) const { js_.set(key, field); }

void InfoFields::operator()(const char* key, double field) const { js_.set(key, field); }

void InfoFields::operator()(const char* key, bool field) const { js_.set(key, field); }

void InfoFields::operator()(const char* key, const char* name) const { js_.set(key, val(name)); }

void InfoFields::operator()(const char* key, Activation field) const {
  (*this)(key, ActivationName(field));
}

void InfoFields::operator()(const char* key, NormKind field) const {
  (*this)(key, Traits(field).name);
}

void InfoFields::operator()(const char* key, WeightType field) const {
  (*this)(key, WeightTypeName(field));
}

void InfoFields::operator()(const char* key, const RopeConfig& field) const {
  if (field.style == RopeStyle::kNone) return;
  val rope = val::object();
  const InfoFields fields(rope, head_dim_);
  fields("style", field.style == RopeStyle::kHalf ? "half" : "interleaved");
  fields("base", field.base);
  fields("rotaryDim", field.rotary_dim == 0 ? head_dim_ : field.rotary_dim);
  js_.set(key, rope);
}

void InfoFields::operator()(const char* key, const QkNormConfig& field) const {
  if (!field.enabled) return;
  val qk_norm = val::object();
  const InfoFields fields(qk_norm, head_dim_);
  fields("kind", field.kind);
  fields("eps", field.eps);
  js_.set(key, qk_norm);
}

NormKind ParseNormKind(const std::string& name, std::string_view what) {
  if (const NormKindTraits* row = RowNamed(kNormKinds, name)) return row->value;
  static constexpr ChoiceList kChoices = ChoicesOf(kNormKinds, &NormKindTraits::name, true);
  throw std::invalid_argument(Cat({what, ": expected ", kChoices.view(), ", got '", name, "'"}));
}

void ReadField(const val& js, const char* key, NormKind& field) {
  const val v = js[key];
  if (Given(v)) field = ParseNormKind(v.as<std::string>(), Cat({"config.", key}));
}

void ReadField(const val& js, const char* key, QkNormConfig& field) {
  const val v = js[key];
  if (!Given(v)) return;
  field.enabled = true;
  const ArgNames& n = JsArgNames();
  if (Given(v["kind"])) field.kind = ParseNormKind(v["kind"].as<std::string>(),
                                                   Cat({"config.", n.qk_norm_kind}));
  ReadField(v, "eps", field.eps);
}

Activation ParseActivation(const std::string& name) {
  for (const ActivationTraits& a : kActivations) {
    if (name == a.name || (a.alias != nullptr && name == a.alias)) return a.value;
  }
  static constexpr ChoiceList kChoices =
      ChoicesOf(kActivations, &ActivationTraits::name, true, &EveryRow<ActivationTraits>,
                &ActivationTraits::alias);
  throw std::invalid_argument(
      Cat({"config.activation: expected ", kChoices.view(), ", got '", name, "'"}));
}

const char* ActivationName(Activation a) { return Traits(a).name; }

}  // namespace simd_attention::bindings

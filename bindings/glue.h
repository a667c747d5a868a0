// Shared helpers of the Embind glue: copying JS typed arrays into the wasm
// heap, returning fresh Float32Array copies, and turning C++ exceptions into
// values the JS layer (web/index.js) throws as JS errors.
//
// Why errors are returned, not thrown: a JS exception thrown from inside wasm
// (emscripten::val::throw_) unwinds through Embind's generated invoker, which
// then skips freeing its argument temporaries, and a C++ exception that
// escapes reaches JS as an opaque WebAssembly.Exception. So every entry point
// runs inside Guard(), which catches everything C++ throws and returns
// {saError: kind, message} instead; web/index.js turns that into an
// Error/RangeError with the same message. Nothing ever unwinds through wasm
// frames, so the instance stays usable after an error.
#pragma once

#include <emscripten/val.h>

#include <array>
#include <initializer_list>
#include <cstdint>
#include <optional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "simd_attention/activation.h"
#include "simd_attention/backend.h"
#include "simd_attention/config_fields.h"
#include "js_arg_names.h"
#include "simd_attention/multi_head_attention.h"

namespace simd_attention::bindings {

using emscripten::val;

// A value the JS side recognises as a failure (see web/index.js, unwrap()).
val ErrorValue(const char* kind, const std::string& message);

// Runs `body` and returns what it returns (a val; undefined for a body that
// returns nothing), converting any exception into ErrorValue:
//   std::invalid_argument, std::length_error (SizeLimitError: a request too
//   large to allocate, with its size; a full KV cache), std::range_error
//   (float32 overflow of valid inputs) -> "invalid_argument" (JS RangeError
//   with the message)
//   std::bad_alloc -> "out_of_memory" (JS RangeError)
//   std::logic_error -> "logic_error" (JS Error)
//   anything else -> "error" (JS Error)
// The catch clauses live once, in GuardCall; each Guard is a trampoline.
val GuardCall(val (*call)(void* body), void* body);

template <typename Body>
val Guard(Body&& body) {
  using B = std::remove_reference_t<Body>;
  return GuardCall(
      [](void* b) -> val {
        if constexpr (std::is_void_v<decltype((*static_cast<B*>(b))())>) {
          (*static_cast<B*>(b))();
          return val::undefined();
        } else {
          return (*static_cast<B*>(b))();
        }
      },
      const_cast<void*>(static_cast<const void*>(&body)));
}

// Throws the logic_error of a method called on an object whose
// construction failed (out of line: Checked() is inlined at every call).
[[noreturn]] void ThrowNotConstructed(const char* kind);

// The C++ object behind an Embind class, made from a JS config. An Embind
// constructor must not throw, so a failed construction is kept and handed to
// JS by TakeError (bound as takeError, after which JS deletes the binding);
// methods reach the object through Checked().
template <class T>
class Owned {
 public:
  val TakeError() {
    val e = error_;
    error_ = val::null();
    return e;
  }
  // The object, for the binding's methods and the functions that take the
  // binding as an argument (training_binding.cc).
  T& Checked() const {
    if (!object_) ThrowNotConstructed(kind_);
    return *object_;
  }

 protected:
  template <class Make>
  Owned(const char* kind, Make&& make) : kind_(kind) {
    error_ = Guard([&] { object_ = make(); });
  }
  // T made from the JS config `js` as `read` reads it.
  template <class Config>
  Owned(const char* kind, Config (*read)(const val&), const val& js)
      : Owned(kind, [&] { return std::make_unique<T>(read(js)); }) {}

 private:
  const char* kind_;
  std::unique_ptr<T> object_;
  val error_ = val::null();
};

// takeError of an Owned binding, bound as a function whose first argument
// is the binding (Embind binds members of the class itself only).
template <class Binding>
val TakeError(Binding& binding) {
  return binding.TakeError();
}

// True if `v` is neither undefined nor null.
inline bool Given(const val& v) { return !v.isUndefined() && !v.isNull(); }

// One copy of a JS Float32Array / Uint8Array into a heap vector (the
// TypedArray.prototype.set of a view onto the freshly allocated storage).
std::vector<float> CopyFloats(const val& array);
std::vector<uint8_t> CopyBytes(const val& array);
std::vector<int32_t> CopyInts(const val& array);  // an Int32Array
// Same, for an optional property: empty if undefined/null.
std::vector<float> CopyFloatsIfGiven(const val& object, const char* key);

// Frees v's storage, without the element-by-element walk that ~vector<float>
// takes in the -Os glue (bindings/free_floats.cc).
void FreeFloats(std::vector<float>& v);

// A fresh Float32Array holding a copy of `data` (never a view onto the heap,
// so it stays valid when the heap grows or the vector is freed).
val ToFloat32Array(const std::vector<float>& data);

// A non-negative integer property (web/src/arguments.js made sure it is one
// below 2^32; C++ judges its value).
size_t SizeOf(const val& object, const char* key);

// One copy of a JS Float32Array into a heap block that is not zero-filled
// first (every element is then written by TypedArray.prototype.set): an
// input's copy, which nothing resizes.
std::unique_ptr<float[]> CopyFloatsUninitialized(const val& array, size_t length);

// A tensor from JS ({data: Float32Array, batch, tokens, features}, as
// web/index.js normalises it), copied into the heap once; `tensor` views it.
struct Input {
  size_t length;
  std::unique_ptr<float[]> data;
  Tensor3 tensor;
  explicit Input(const val& js)
      : length(js["data"]["length"].as<size_t>()),
        data(CopyFloatsUninitialized(js["data"], length)),
        tensor{{data.get(), length}, SizeOf(js, "batch"), SizeOf(js, "tokens"),
               SizeOf(js, "features")} {}
};

// An optional Uint8Array property, copied; empty if undefined/null.
std::vector<uint8_t> CopyBytesIfGiven(const val& object, const char* key);

// config.rope from JS ({style, base, rotaryDim}; undefined: none).
RopeConfig RopeFromJs(const val& js);

// 'none', 'top-left' or 'bottom-right' (JS's names for CausalAlignment).
CausalAlignment ParseCausal(const std::string& causal);
// options.causal of MultiHeadAttention and the layers: a boolean (true:
// bottom-right, as before alignments could be named) or an alignment's
// name; sets `on` and, for a name, `alignment`.
void ReadCausal(const val& causal, bool& on, CausalAlignment& alignment);

// config.activation ('relu', 'gelu' = 'gelu_erf', 'gelu_tanh'), whose
// unknown names it refuses, and back for the resolved config.
Activation ParseActivation(const std::string& name);
const char* ActivationName(Activation a);

// config.weights ('f32', 'f16', 'bf16' or 'int8': JS's names for
// WeightType) or config.cacheType (the first three; `cache` true), and
// back for the resolved config.
WeightType ParseWeightType(const std::string& name, bool cache = false);
const char* WeightTypeName(WeightType type);

// A config's or options' field from JS when `js` has `key` (neither
// undefined nor null; JS checked its type), converted as the field's type
// says; otherwise the field keeps its C++ default. One out-of-line reader
// per type, so each field costs a call. A WeightType field is
// config.cacheType's set of names when `key` is kCacheTypeKey.
void ReadField(const val& js, const char* key, size_t& field);
void ReadField(const val& js, const char* key, double& field);
void ReadField(const val& js, const char* key, bool& field);
void ReadField(const val& js, const char* key, Activation& field);
void ReadField(const val& js, const char* key, Backend& field);
void ReadField(const val& js, const char* key, WeightType& field);
void ReadField(const val& js, const char* key, RopeConfig& field);
void ReadField(const val& js, const char* key, NormKind& field);
// config.qkNorm ({kind?, eps?}; undefined: none).
void ReadField(const val& js, const char* key, QkNormConfig& field);
// A norm kind's JS name ('layer_norm', 'rms_norm', 'gemma_rms_norm'), which
// `what` names in the message of an unknown one.
NormKind ParseNormKind(const std::string& name, std::string_view what);

// The visitors of a VisitFields(config, visit) list, which names each field
// of a config or options struct once with its JavaScript key (as gemma.cpp's
// VisitFields): GivenFields reads the keys a JS object has, FieldsToJs
// writes every field (numbers and booleans) into a JS object, InfoFields
// every field of a resolved config as info() reports it.
class GivenFields {
 public:
  explicit GivenFields(const val& js) : js_(js) {}
  template <class T>
  void operator()(const char* key, T& field) const {
    ReadField(js_, key, field);
  }

 private:
  const val& js_;
};

class FieldsToJs {
 public:
  explicit FieldsToJs(val& js) : js_(js) {}
  template <class T>
  void operator()(const char* key, const T& field) const {
    js_.set(key, field);
  }

 private:
  val& js_;
};

// Every value a JS object of one call, its names as JS strings: the enums'
// (their tables' names); rope and qkNorm as objects, left out when off, the
// rotary width resolved with `head_dim`; the backend is the kernels'
// (ConfigInfo). Each a call: the link would copy a set() into every field.
class InfoFields {
 public:
  InfoFields(val& js, size_t head_dim) : js_(js), head_dim_(head_dim) {}
  void operator()(const char* key, size_t field) const;
  void operator()(const char* key, double field) const;
  void operator()(const char* key, bool field) const;
  void operator()(const char* key, const char* name) const;
  void operator()(const char* key, Activation field) const;
  void operator()(const char* key, NormKind field) const;
  void operator()(const char* key, WeightType field) const;
  void operator()(const char*, Backend) const {}
  void operator()(const char* key, const RopeConfig& field) const;
  void operator()(const char* key, const QkNormConfig& field) const;

 private:
  val& js_;
  size_t head_dim_;
};

// The fields of the configs of the objects holding attentions (MhaConfig,
// LayerConfig, BlockConfig), as simd_attention/config_fields.h lists them.
template <class Config, class Visit>
  requires requires(Config& c) { c.cache_type; }
void VisitFields(Config& c, const Visit& visit) {
  VisitConfigFields(visit, c);
}

// A config from JS: the keys JS gave, the others at the C++ struct's
// defaults (which C++ alone owns); its messages use the JS names.
template <class Config>
Config ConfigFromJs(const val& js) {
  Config c;
  VisitFields(c, GivenFields(js));
  c.names = &JsArgNames();
  return c;
}

// info() of an object holding attentions: the fields of its resolved
// config `c`, headDim (its heads' width), and the backend and kernels of
// `kernels`, in a new object the caller may add its own fields to.
void AddKernels(const InfoFields& info, size_t head_dim, const KernelTable& kernels);
template <class Config>
val ConfigInfo(const Config& c, size_t head_dim, const KernelTable& kernels) {
  val v = val::object();
  const InfoFields info(v, head_dim);
  VisitFields(c, info);
  AddKernels(info, head_dim, kernels);
  return v;
}

// An array of integers from JS (types checked by the JS side) that are at
// least `min` and below 2^53, so that they convert exactly; `name` names it
// in the message otherwise.
std::vector<double> Integers(const std::string& name, const val& array, double min);
// Same, for sizes (>= 0).
std::vector<size_t> Sizes(const std::string& name, const val& array);

// The options attention() and every forward share, as the user spelt them
// ({scale, softcap, window, attnMask, attnMaskShape, boolMask,
// boolMaskShape, keyPaddingMask, kvLengths, queryOffset?,
// returnAttnWeights?, returnScores?, scoresStage?}; types checked), copied;
// SetOn points an options struct at the copies. undefined: none given
// (each field keeps its C++ default; a decoding step reads no property).
struct JsAttentionOptions {
  std::vector<float> attn_mask;
  std::vector<size_t> attn_mask_shape;
  std::vector<uint8_t> bool_mask;
  std::vector<size_t> bool_mask_shape;
  std::vector<uint8_t> key_padding_mask;
  std::vector<size_t> kv_lengths;
  std::array<int64_t, 2> window{-1, -1};
  std::vector<int64_t> query_offset;
  std::optional<double> scale, softcap;
  bool need_weights = false, need_scores = false;
  ScoresStage scores_stage = ScoresStage::kMasked;  // scoresStage: the name
  explicit JsAttentionOptions(const val& js);

  // MhaOptions, SdpaOptions or a layer's SelfAttentionOptions: the fields
  // it has of these names view the copies.
  template <class Options>
  void SetOn(Options& o) const {
    o.attn_mask = attn_mask;
    o.attn_mask_shape = attn_mask_shape;
    o.bool_mask = bool_mask;
    o.bool_mask_shape = bool_mask_shape;
    o.kv_lengths = kv_lengths;
    o.window = window;
    o.scale = scale;
    o.softcap = softcap;
    if constexpr (requires { o.key_padding_mask; }) o.key_padding_mask = key_padding_mask;
    if constexpr (requires { o.need_weights; }) o.need_weights = need_weights;
    if constexpr (requires { o.need_scores; }) o.need_scores = need_scores;
    if constexpr (requires { o.scores_stage; }) o.scores_stage = scores_stage;
    if constexpr (requires { o.query_offset; }) o.query_offset = query_offset;
  }
};

// A forward's options from JS with copies of their masks, which `options`
// views: MhaOptions, SdpaOptions, a layer's or a block's (EncoderOptions,
// DecoderOptions, BlockOptions: the attention's under self_attention), or
// SelfAttentionOptions alone (their incremental steps). The fields the
// struct has are read: causal (a boolean or an alignment's name, where it
// has an alignment), memoryKeyPaddingMask, returnPerHeadOutput,
// returnIntermediates, positionOffset, training; undefined reads none.
template <class Options>
struct JsForwardOptions {
  JsAttentionOptions attention;
  std::vector<uint8_t> memory_mask;
  Options options;
  // Out of line, so that each call of a type calls one copy.
  explicit JsForwardOptions(const val& js);
};

template <class Options>
JsForwardOptions<Options>::JsForwardOptions(const val& js) : attention(js) {
  if constexpr (requires { options.self_attention; }) {
    attention.SetOn(options.self_attention);
    options.key_padding_mask = attention.key_padding_mask;
  } else {
    attention.SetOn(options);
  }
  if (!Given(js)) return;
  if constexpr (requires { options.causal_alignment; }) {
    ReadCausal(js["causal"], options.causal, options.causal_alignment);
  }
  if constexpr (requires { options.memory_key_padding_mask; }) {
    memory_mask = CopyBytesIfGiven(js, "memoryKeyPaddingMask");
    options.memory_key_padding_mask = memory_mask;
  }
  if constexpr (requires { options.need_intermediates; }) {
    ReadField(js, "returnPerHeadOutput", options.need_per_head_output);
    ReadField(js, "returnIntermediates", options.need_intermediates);
  }
  if constexpr (requires { options.position_offset; }) {
    ReadField(js, "positionOffset", options.position_offset);
  }
  if constexpr (requires { options.training; }) ReadField(js, "training", options.training);
}

// One weight matrix from JS (glueMatrix in web/src/arguments.js): a
// Float32Array, {bits: Uint8Array} (float16/bfloat16 bits as bytes),
// {values: Uint8Array (int8 as bytes), scales: Float32Array} or {q4:
// Uint8Array} (GGUF q4_0 blocks); copied, the stored forms as bytes (one
// copy routine for all). Whether the form fits config.weights is the C++
// API's to judge (StoredMatrix).
struct JsMatrix {
  enum class Form { kFloats, kBits, kInt8, kQ4 };
  std::vector<float> floats, scales;
  std::vector<uint8_t> bytes;
  Form form = Form::kFloats;
  explicit JsMatrix(const val& js);
  StoredMatrix stored() const;
};

// One attention's weights from JS ({wQ, wK, wV, wO, bQ?, bK?, bV?, bO?,
// qNorm?, kNorm?}), copied; `weights` views the copies.
struct JsMhaWeights {
  JsMatrix w_q, w_k, w_v, w_o;
  std::vector<float> b_q, b_k, b_v, b_o, q_norm, k_norm;
  MhaWeights weights;
  explicit JsMhaWeights(const val& js);
};

// A JS object of sizes ({batch, tq, tk}: a result's shape, an info()).
struct NamedSize {
  const char* key;
  size_t size;
};
val SizesToJs(std::initializer_list<NamedSize> sizes);

// A fresh Float32Array copy of `data`, whose storage is then freed.
val TakeFloat32Array(std::vector<float>& data);

// An attention's output, and its attnWeights and scores where `o` asked
// for them, as fresh arrays set on `out`; r's vectors are freed.
template <class Result, class Options>
void SetAttentionArrays(val& out, Result& r, const Options& o) {
  out.set("output", TakeFloat32Array(r.output));
  if (o.need_weights) out.set("attnWeights", TakeFloat32Array(r.attn_weights));
  if (o.need_scores) out.set("scores", TakeFloat32Array(r.scores));
}

// {batch, tq, tk, output, attnWeights?, scores?, perHeadOutput?, q?, k?, v?,
// headOutput?} as fresh arrays (the last four with need_intermediates);
// frees each of r's vectors once copied.
val ResultToJs(MhaResult&& r, const MhaOptions& o);

}  // namespace simd_attention::bindings

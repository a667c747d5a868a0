#include "glue.h"

#include <cmath>

namespace simd_attention::bindings {

val ErrorValue(const char* kind, const std::string& message) {
  val error = val::object();
  error.set("saError", val(kind));
  error.set("message", val(message));
  return error;
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

std::vector<float> CopyFloats(const val& array) {
  return CopyArray<float>(array);
}

std::vector<uint8_t> CopyBytes(const val& array) {
  return CopyArray<uint8_t>(array);
}

std::vector<float> CopyFloatsIfGiven(const val& object, const char* key) {
  const val v = object[key];
  return Given(v) ? CopyFloats(v) : std::vector<float>{};
}

val ToFloat32Array(const std::vector<float>& data) {
  // new Float32Array(view) copies the view's elements into a new buffer.
  return val::global("Float32Array")
      .new_(emscripten::typed_memory_view(data.size(), data.data()));
}

size_t SizeOf(const val& object, const char* key) {
  const double v = object[key].as<double>();
  if (!(v >= 0) || v != std::floor(v) || v > 4294967295.0) {
    throw std::invalid_argument(std::string(key) +
                                ": expected a non-negative integer");
  }
  return static_cast<size_t>(v);
}

}  // namespace simd_attention::bindings

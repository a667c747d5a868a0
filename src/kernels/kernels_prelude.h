// Everything the textual kernel headers (*-inl.h) use, included by each
// backend's instantiation file before it opens its per-target namespace.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "dispatch/kernel_table.h"
#include "kernels/attention.h"
#include "kernels/attention_backward.h"
#include "kernels/gemm.h"
#include "kernels/int8_gemm.h"
#include "kernels/q4_gemm.h"
#include "kernels/rope.h"
#include "simd_attention/activation.h"
#include "simd_attention/backend.h"
#include "training/training_module.h"

// Where an object holding a config (MultiHeadAttention, the tiny model,
// ScaledDotProductAttention) runs, said once.
#pragma once

#include <memory>
#include <utility>

#include "dispatch/kernel_table.h"
#include "simd_attention/thread_pool.h"

namespace simd_attention {

// The pool given, or the shared pool of config.threads where it is null;
// config.threads and config.backend then name what the object runs on
// (the pool's threads, the kernels' backend), as its info() reports them.
template <class Config>
std::shared_ptr<ThreadPool> RunsOn(Config& config, const KernelTable& kernels,
                                   std::shared_ptr<ThreadPool> pool) {
  if (pool == nullptr) pool = SharedThreadPool(config.threads);
  config.threads = pool->threads();
  config.backend = kernels.backend;
  return pool;
}

}  // namespace simd_attention

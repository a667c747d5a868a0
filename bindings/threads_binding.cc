// The threaded builds' thread pool: started once the loader's workers are
// loaded (startThreads), ended by module.dispose() (stopThreads) before the
// loader terminates the workers.
#include <emscripten/bind.h>

#include <memory>

#include "glue.h"
#include "simd_attention/thread_pool.h"

namespace simd_attention::bindings {
namespace {

// The module's pool, held from start to stop so that its pthreads occupy
// the workers for the module's lifetime: every object of that many threads
// shares it (SharedThreadPool), and nothing else can take a worker.
std::shared_ptr<ThreadPool>& ModulePool() {
  static std::shared_ptr<ThreadPool> pool;
  return pool;
}

// `threads` (the caller included) run on threads - 1 loaded workers.
val StartThreads(size_t threads) {
  return Guard([&] {
    if (threads == 0) ThreadPool refused(threads);  // throws the constructor's error
    ModulePool() = SharedThreadPool(threads);
    SetWasmThreads(threads);
    // Returns once every pthread runs: their start in the workers allocates
    // on the module's heap, which is then steady (memoryStats()).
    ModulePool()->Run(threads, [](size_t, size_t) {});
    return val(ModulePool()->threads());
  });
}

// Joins the pool's pthreads (objects still holding it are disposed first by
// the JS side), after which the module runs on its calling thread alone.
void StopThreads() {
  ModulePool().reset();
  SetWasmThreads(1);
}

}  // namespace

EMSCRIPTEN_BINDINGS(simd_attention_threads) {
  emscripten::function("startThreads", &StartThreads);
  emscripten::function("stopThreads", &StopThreads);
}

}  // namespace simd_attention::bindings

// The threaded builds' thread pool: made when the module starts
// (startThreads), its threads started one by one as the loader's workers
// load (startThread), ended by module.dispose() (stopThreads) before the
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

// A pool of `threads` (the caller included) with none of its threads
// started yet: until they are, its loops run on the calling thread (and
// those started), with the same results. `processors`: the logical
// processors the page or process reports; no loop runs on more threads,
// and the pool starts no more (the loader makes as many workers).
val StartThreads(size_t threads, size_t processors) {
  return Guard([&] {
    if (threads == 0) ThreadPool refused(threads);  // throws the constructor's error
    SetWasmProcessors(processors);
    ModulePool() = SharedThreadPool(threads, ThreadPool::Start::kLater);
    SetWasmThreads(threads);
    return val(ModulePool()->threads());
  });
}

// Starts the next thread of the pool, on a worker that has loaded (emcc
// gives a pthread the last worker of PThread.unusedWorkers, where the loader
// puts that one); returns, once it runs, how many run, the caller included.
val StartThread() {
  return Guard([&] { return val(ModulePool() ? ModulePool()->StartThread() : 1); });
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
  emscripten::function("startThread", &StartThread);
  emscripten::function("stopThreads", &StopThreads);
}

}  // namespace simd_attention::bindings

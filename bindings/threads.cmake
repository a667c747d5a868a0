# The threaded builds (SA_WASM_THREADS): simd_attention_simd_threads and
# simd_attention_relaxed_threads, with <name>.worker.js beside them.
#
# emcc starts pthreads in Web Workers, and one only starts running once the
# thread that created it returns to the event loop, which a synchronous
# forward never does: every worker must exist before the module starts, and
# a pthread is created only on a worker that has loaded. PTHREAD_POOL_SIZE is a JS expression evaluated when
# the runtime starts, before the .wasm is instantiated; ours calls the
# package's loader (Module.startWorkers, web/src/thread-workers.js) with
# emcc's PThread object. The loader creates the workers itself (Node has no
# Web Worker, and its worker_threads need an adapter) and pushes them into
# PThread.unusedWorkers, which emcc then loads (the loader does not let it
# wait for them: each starts a thread of the module's pool once loaded). It
# returns 0, so emcc allocates none of its own.
#
# PTHREAD_POOL_SIZE_STRICT=2: a thread beyond those workers fails
# (pthread_create returns EAGAIN) instead of waiting forever for a worker
# that cannot start; the C++ core refuses such counts before that
# (ThreadPool, SetWasmThreads).
set_target_properties(sa_js_module PROPERTIES OUTPUT_NAME ${SA_JS_MODULE_NAME}_threads)
target_link_options(sa_js_module PRIVATE
  "-sPTHREAD_POOL_SIZE=Module.startWorkers(PThread)"
  -sPTHREAD_POOL_SIZE_STRICT=2)
target_sources(sa_js_module PRIVATE threads_binding.cc wasm_eh_threads.cc)
# A wasm object, not LLVM bitcode: the landing pads that use its
# __wasm_lpad_context are made after link-time optimization, which would
# otherwise drop it as unused.
set_source_files_properties(wasm_eh_threads.cc PROPERTIES COMPILE_OPTIONS -fno-lto)

// WebAssembly exception handling in the threaded builds (emcc 3.1.6, LLVM
// 14): this file replaces libunwind's Unwind-wasm.c there.
//
// A C++ catch clause works through a landing-pad context: the compiler's
// landing pads write the pad index and LSDA into the global
// __wasm_lpad_context, then _Unwind_CallPersonality runs the personality
// routine on it, which writes back which clause matches. Emscripten's
// libunwind declares that global thread_local, but LLVM 14's landing pads
// still address it as an ordinary global (LLVM 15 made them agree). With
// -pthread the two are different memory: the personality routine sees no
// landing pad, and every exception falls through to catch (...), so each
// error of the API would reach JS as "unknown C++ exception".
//
// Here the context is the ordinary global the landing pads write. One
// context for all threads is enough: only the thread that calls into the
// module throws (a pool's tasks must not throw, see ThreadPool::Run). The
// functions are those of LLVM's Unwind-wasm.c (Apache-2.0 WITH
// LLVM-exception), all of them, so that the linker never takes that file
// from the archive (its definitions would clash with these).
#include <cstdint>

extern "C" {

// The parts of libunwind's unwind.h used here, with its types: the
// compiler's own unwind.h (which em++ finds first) differs in the widths of
// _Unwind_Word and in LSDA's type, and these must match the callers in
// libc++abi.
enum _Unwind_Reason_Code { _URC_FOREIGN_EXCEPTION_CAUGHT = 1 };
using _Unwind_Action = int;
constexpr _Unwind_Action _UA_CLEANUP_PHASE = 2;
struct _Unwind_Context;
struct _Unwind_Exception {
  uint64_t exception_class;
  void (*exception_cleanup)(_Unwind_Reason_Code reason, _Unwind_Exception* exception);
};

_Unwind_Reason_Code __gxx_personality_wasm0(int version, _Unwind_Action actions,
                                            uint64_t exception_class,
                                            _Unwind_Exception* exception,
                                            _Unwind_Context* context);

struct _Unwind_LandingPadContext {
  uintptr_t lpad_index;  // in: the landing pad
  uintptr_t lsda;        // in: its language-specific data
  uintptr_t selector;    // out: which catch clause matches
};

_Unwind_LandingPadContext __wasm_lpad_context;

// Called by the landing pads. Wasm unwinds in one phase (the engine's), so
// only the cleanup phase runs.
_Unwind_Reason_Code _Unwind_CallPersonality(void* exception_ptr) {
  auto* exception = static_cast<_Unwind_Exception*>(exception_ptr);
  __wasm_lpad_context.selector = 0;
  return __gxx_personality_wasm0(1, _UA_CLEANUP_PHASE, exception->exception_class, exception,
                                 reinterpret_cast<_Unwind_Context*>(&__wasm_lpad_context));
}

// Called by __cxa_throw.
_Unwind_Reason_Code _Unwind_RaiseException(_Unwind_Exception* exception) {
  __builtin_wasm_throw(0, exception);
}

// Called by __cxa_end_catch.
void _Unwind_DeleteException(_Unwind_Exception* exception) {
  if (exception->exception_cleanup != nullptr) {
    exception->exception_cleanup(_URC_FOREIGN_EXCEPTION_CAUGHT, exception);
  }
}

// The personality routine sets the selector as register 1.
void _Unwind_SetGR(_Unwind_Context* context, int index, uintptr_t value) {
  if (index == 1) reinterpret_cast<_Unwind_LandingPadContext*>(context)->selector = value;
}

// The personality routine uses the result - 2 as the landing pad's index.
uintptr_t _Unwind_GetIP(_Unwind_Context* context) {
  return reinterpret_cast<_Unwind_LandingPadContext*>(context)->lpad_index + 2;
}

void _Unwind_SetIP(_Unwind_Context*, uintptr_t) {}

uintptr_t _Unwind_GetLanguageSpecificData(_Unwind_Context* context) {
  return reinterpret_cast<_Unwind_LandingPadContext*>(context)->lsda;
}

uintptr_t _Unwind_GetRegionStart(_Unwind_Context*) { return 0; }

}  // extern "C"

// What this JS engine's WebAssembly runs, probed with tiny modules: the
// loader picks a build by it (createAttentionModule, and the pool for its
// workers).

// (module (func (result v128) i32.const 0 i8x16.splat i8x16.popcnt))
// i8x16.popcnt is one of the last instructions added to the SIMD proposal, so
// engines that shipped an earlier draft of it do not count as supporting it.
const SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
  0x03, 0x02, 0x01, 0x00, // func 0 has type 0
  0x0a, 0x0a, 0x01, 0x08, 0x00, // code: 1 body, 8 bytes, no locals
  0x41, 0x00, // i32.const 0
  0xfd, 0x0f, // i8x16.splat
  0xfd, 0x62, // i8x16.popcnt
  0x0b, // end
]);

// (module (func (result v128) i32.const 0 i8x16.splat i32.const 0
//   i8x16.splat i32.const 0 i8x16.splat f32x4.relaxed_madd)): relaxed SIMD
// with its standard opcode (0xfd 0x85 0x02), the one the relaxed build uses.
// Engines that only knew the proposal's drafts reject it.
const RELAXED_SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
  0x03, 0x02, 0x01, 0x00, // func 0 has type 0
  0x0a, 0x13, 0x01, 0x11, 0x00, // code: 1 body, 17 bytes, no locals
  0x41, 0x00, 0xfd, 0x0f, // i32.const 0, i8x16.splat
  0x41, 0x00, 0xfd, 0x0f,
  0x41, 0x00, 0xfd, 0x0f,
  0xfd, 0x85, 0x02, // f32x4.relaxed_madd
  0x0b, // end
]);

// (module (func try catch_all end)): the exception-handling instructions
// every build uses (C++ exceptions compiled with -fwasm-exceptions).
const EH_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: () -> ()
  0x03, 0x02, 0x01, 0x00,
  0x0a, 0x08, 0x01, 0x06, 0x00, // code: 1 body, 6 bytes, no locals
  0x06, 0x40, // try (empty block type)
  0x19, // catch_all
  0x0b, // end (try)
  0x0b, // end (func)
]);

function validates(bytes) {
  try {
    return typeof WebAssembly === 'object' && WebAssembly.validate(bytes);
  } catch {
    return false;
  }
}

/** Whether this JS engine runs WebAssembly SIMD (the SIMD build). */
export function wasmSimdSupported() {
  return validates(SIMD_PROBE);
}

/** Whether this JS engine runs WebAssembly relaxed SIMD (the fastest build). */
export function wasmRelaxedSimdSupported() {
  return validates(RELAXED_SIMD_PROBE);
}

// Whether this engine has the WebAssembly exception handling every build needs.
export function exceptionsSupported() {
  return validates(EH_PROBE);
}

// The glue's failures as JS errors. Every failure comes back from C++ as a
// value (bindings/glue.h) whose message C++ composed with the JS names
// (bindings/js_arg_names.cc); unwrap() throws it after the method's name.

function mib(bytes) {
  return `${Math.round(bytes / 1048576)} MiB`;
}

// The glue returns {saError: kind, message} instead of throwing (see
// bindings/glue.h); everything else is a result.
export function unwrap(wasm, where, result) {
  if (result === null || typeof result !== 'object' || typeof result.saError !== 'string') {
    return result;
  }
  const message = `${where}: ${result.message}`;
  switch (result.saError) {
    case 'invalid_argument':
      return fail(new RangeError(message));
    case 'out_of_memory': {
      const m = wasm.memoryStats();
      return fail(new RangeError(`${where}: out of wasm memory: the heap is ` +
        `${mib(m.heapBytes)} and cannot grow past ${mib(m.maxHeapBytes)} ` +
        `(C++: ${result.message}); use smaller inputs or fewer outputs`));
    }
    default:
      return fail(new Error(message));
  }
}

function fail(error) {
  throw error;
}

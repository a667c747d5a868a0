// The glue's failures as JS errors. Every failure comes back from C++ as a
// value (bindings/glue.h) that unwrap() throws with JS names in its message.

// The C++ API names things in snake_case; the JS API in camelCase.
const CPP_NAMES = [
  ['w_q', 'wQ'], ['w_k', 'wK'], ['w_v', 'wV'], ['w_o', 'wO'],
  ['b_q', 'bQ'], ['b_k', 'bK'], ['b_v', 'bV'], ['b_o', 'bO'],
  ['key_padding_mask', 'options.keyPaddingMask'], ['attn_mask', 'options.attnMask'],
  ['d_model', 'dModel'], ['num_heads', 'numHeads'], ['head_dim_v', 'headDimV'],
  ['kdim', 'kDim'], ['vdim', 'vDim'], ['ffn_dim', 'ffnDim'],
].map(([cpp, js]) => [new RegExp(`(?<!\\w)${cpp}\\b`, 'g'), js]);

function jsNames(message) {
  return CPP_NAMES.reduce((m, [re, js]) => m.replace(re, js), message);
}

function mib(bytes) {
  return `${Math.round(bytes / 1048576)} MiB`;
}

// The glue returns {saError: kind, message} instead of throwing (see
// bindings/glue.h); everything else is a result.
export function unwrap(wasm, where, result) {
  if (result === null || typeof result !== 'object' || typeof result.saError !== 'string') {
    return result;
  }
  // "forwardIncremental: ..." from C++ under where = "X.forwardIncremental"
  // is said once.
  const method = where.slice(where.lastIndexOf('.') + 1);
  const text = result.message.startsWith(`${method}: `)
    ? result.message.slice(method.length + 2) : result.message;
  const message = `${where}: ${jsNames(text)}`;
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

// Splitting a call's units over a pool's workers: contiguous groups of heads
// or hidden units, and the masks of an attention's call cut to a worker's
// heads where they have a head axis.
import { plainMember } from './pool-arguments.js';

// Units [from, to) of `units` held by each of `count` workers, empty groups
// left out: [{ worker, from, to }].
export function splitUnits(units, count) {
  const groups = [];
  for (let w = 0; w < count; ++w) {
    const from = Math.floor((w * units) / count);
    const to = Math.floor(((w + 1) * units) / count);
    if (to > from) groups.push({ worker: w, from, to });
  }
  return groups;
}

// Entries [from, to) along the axis of size `size` of data shaped
// [outer, size, inner].
function sliceAxis(data, outer, size, inner, from, to) {
  const n = outer * (to - from) * inner;
  const out = data instanceof Uint8Array ? new Uint8Array(n) : new Float32Array(n);
  for (let o = 0; o < outer; ++o) {
    out.set(data.subarray((o * size + from) * inner, (o * size + to) * inner),
      o * (to - from) * inner);
  }
  return out;
}

// Whether a mask has a head axis to split: a bare mask of B * H * Tq * Tk
// values (C++ reads it as [B, H, Tq, Tk]) or a tensor shaped
// [B or 1, H, Tq, Tk or fewer keys]. Masks that broadcast over the heads,
// and anything C++ will refuse or whose reading throws, go to every worker
// whole. (Read with plainMember: the workers' synchronous objects meet a
// read's error in the synchronous API's order.)
export function hasHeadAxis(mask, batch, heads, tq, tk) {
  if (mask === undefined || mask === null || heads === 1) return false;
  if (ArrayBuffer.isView(mask)) {
    return 'length' in mask && batch * heads > 1 && mask.length === batch * heads * tq * tk;
  }
  const data = plainMember(mask, 'data');
  const shape = plainMember(mask, 'shape');
  const dims = Array.isArray(shape) && shape.length === 4
    ? [0, 1, 2, 3].map((i) => plainMember(shape, i)) : [];
  return dims.length === 4 && (dims[0] === batch || dims[0] === 1) && dims[1] === heads &&
    dims[2] === tq && dims[3] >= 1 && dims[3] <= tk && ArrayBuffer.isView(data) &&
    'length' in data && data.length === dims[0] * heads * tq * dims[3];
}

// The mask's part for heads [from, to).
export function headSlice(mask, batch, heads, tq, tk, from, to) {
  if (!hasHeadAxis(mask, batch, heads, tq, tk)) return mask;
  if (ArrayBuffer.isView(mask)) return sliceAxis(mask, batch, heads, tq * tk, from, to);
  const [outer, , , keys] = mask.shape;
  return { data: sliceAxis(mask.data, outer, heads, tq * keys, from, to),
    shape: [outer, to - from, tq, keys] };
}

// The arguments of one call's messages to a pool's workers: a tensor that
// goes to several workers copied once into shared memory where there is
// some, any other into a buffer its message moves.
import { plainMember, withMembers } from './pool-arguments.js';

// Whether the workers can share memory with this thread: browsers give
// SharedArrayBuffer to cross-origin isolated pages only.
const canShare = typeof SharedArrayBuffer === 'function' && globalThis.crossOriginIsolated !== false;

// The arguments of one call's messages to `count` workers, argsOf(i) those
// of the i-th: { sent: [{ args, transfer }], release }. A tensor that goes
// to several workers is copied once into shared memory that their messages
// refer to, where there is some; any other is copied into a buffer of the
// worker's own that its message moves instead of copying again (a
// structured clone is much slower than a copy). The same tensor twice (key
// = query) stays one tensor. release() returns the shared memory for reuse
// once every worker has answered (it has read its inputs by then).
export function outgoing(argsOf, count) {
  const lists = Array.from({ length: count }, (_, i) => argsOf(i));
  const isTensor = (arg) => {
    const data = plainMember(arg, 'data');
    return ArrayBuffer.isView(data) && !(data instanceof DataView);
  };
  const workersOf = new Map(); // tensor -> how many workers it goes to
  if (canShare && count > 1) {
    for (const list of lists) {
      for (const arg of new Set(list.filter(isTensor))) workersOf.set(arg, (workersOf.get(arg) ?? 0) + 1);
    }
  }
  const shared = new Map(); // tensor -> its copy in shared memory
  const sent = lists.map((list) => {
    const own = new Map();
    const transfer = [];
    const args = list.map((arg) => {
      if (!isTensor(arg)) return arg;
      if (workersOf.get(arg) > 1) {
        if (!shared.has(arg)) {
          shared.set(arg, withMembers(arg, { data: sharedMemory.copy(arg.data) }));
        }
        return shared.get(arg);
      }
      if (!own.has(arg)) {
        const data = arg.data.slice();
        transfer.push(data.buffer);
        own.set(arg, withMembers(arg, { data }));
      }
      return own.get(arg);
    });
    return { args, transfer };
  });
  return { sent, release: () => shared.forEach(({ data }) => sharedMemory.release(data.buffer)) };
}

// SharedArrayBuffers kept for the next calls of the same sizes: a new one
// costs several times a copy of its size (116 us for S2's 393 kB input in
// Node, where a slice() takes 25 us), as the memory is mapped and zeroed.
// At most SPARE_SIZES sizes, two of each.
const SPARE_SIZES = 8;
const sharedMemory = {
  spare: new Map(), // byteLength -> [SharedArrayBuffer]
  copy(data) {
    const buffer = this.spare.get(data.byteLength)?.pop() ?? new SharedArrayBuffer(data.byteLength);
    const copy = new data.constructor(buffer);
    copy.set(data);
    return copy;
  },
  release(buffer) {
    const list = this.spare.get(buffer.byteLength) ?? [];
    this.spare.delete(buffer.byteLength); // most recent size last
    if (list.length < 2) list.push(buffer);
    this.spare.set(buffer.byteLength, list);
    if (this.spare.size > SPARE_SIZES) this.spare.delete(this.spare.keys().next().value);
  },
};

// What the objects of one pool share: its workers (pool-workers.js), the refs
// that name its objects in them, how many layers each worker holds whole, and
// the module functions, each call run whole on the next worker in turn.
import { copyArguments, whole } from './pool-arguments.js';
import { outgoing } from './pool-outgoing.js';

export class PoolContext {
  #nextRef = 1;
  #nextWorker = 0;

  constructor(workers) {
    this.workers = workers;
    // A layer placed whole runs in one worker, the one holding the fewest
    // layers, so that the pool spreads such layers over its workers.
    this.layersHeld = new Array(workers.count).fill(0);
    // The pool's quantizeInt8, which splitting int8 weights uses too
    // (quantizedWhole).
    this.quantizeInt8 = this.moduleFunction('quantizeInt8', []);
  }

  // The ref of a new object in the workers.
  newRef() { return this.#nextRef++; }

  // positionalEncoding, layerNorm, attention and quantizeInt8: each call
  // whole on the next worker in turn, its arguments read by `schemas` (see
  // pool-arguments.js), its tensors copied out as a forward's are.
  moduleFunction(fn, schemas) {
    const { workers } = this;
    return async (...given) => {
      const taken = copyArguments(given, given.map((_, i) => schemas[i] ?? whole));
      workers.check(fn);
      const args = taken();
      const worker = this.#nextWorker;
      this.#nextWorker = (this.#nextWorker + 1) % workers.count;
      const { sent: [sent] } = outgoing(() => args, 1);
      const [value] = await workers.all([worker], () => ({ op: 'module', fn, args: sent.args }),
        () => sent.transfer);
      return value;
    };
  }
}

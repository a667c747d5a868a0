// What the pool's split layers and blocks share (pool-split-layers.js,
// pool-split-blocks.js): their parts, queued calls, and the synchronous
// errors. Types are checked by the caller by the synchronous API's own
// functions; shapes and values by the workers' objects. An error from a
// worker that does not name the object's method names the part that refused
// (a MultiHeadAttention), so the synchronous error is made again by worker 0
// on a whole synchronous object of the same config (zero weights, empty
// stand-ins of the caches and memories) for the same arguments; when that
// one does not fail (an overflow that depends on the real weights), the
// worker's error stands, named after the object's method as the synchronous
// object names it.
import { fromCaller } from './pool-join.js';
import { copyArguments } from './pool-arguments.js';
import { ConfiguredObject } from './pool-object.js';

// A part's error under the object's method `where`, as the synchronous
// object reports what its parts throw ("MultiHeadAttention.forward: attention
// scores ..." -> "TransformerEncoderLayer.forward: attention scores ...").
function named(error, where) {
  return new error.constructor(`${where}: ${error.message.replace(/^[\w.]+: /, '')}`);
}

export class SplitObject extends ConfiguredObject {
  #kind;
  #given; // the config as given, for worker 0's synchronous object
  #parts; // the pool objects it is made of
  #hasWeights = false;

  // given: the config as given; resolved: { config, kernels } as worker 0's
  // synchronous object reports them.
  constructor(context, kind, given, resolved, parts) {
    super(context, context.newRef(), [], resolved);
    this.#kind = kind;
    this.#given = given;
    this.#parts = parts;
  }

  get placement() { return 'split'; }

  // Disposing of the object disposes of its parts, which hold its objects
  // in the workers (it has none of its own).
  released() {
    return Promise.all(this.#parts.map((part) => part.dispose()));
  }

  weightsSet() { this.#hasWeights = true; }

  // Runs body(where, args) as the next call on the object, args its
  // arguments `given` copied now by `schemas` (pool-arguments.js). A
  // disposed object, or one without weights when the method needs them,
  // says so as the synchronous one does; any error of a worker is made
  // again as the synchronous object's (see the top of this file), and what
  // reading the caller's arguments threw is thrown as it is.
  // sent(args): the call's arguments as worker 0's synchronous object takes
  // them.
  run(method, needsWeights, given, schemas, body, sent = (args) => args) {
    const where = `${this.#kind}.${method}`;
    const taken = copyArguments(given, schemas);
    return this.enqueue(async () => {
      this.workers.check(where);
      if (this.disposed || (needsWeights && !this.#hasWeights)) {
        await this.synchronousError(where, method, [], { disposed: this.disposed });
      }
      const args = taken();
      try {
        return await body(where, args);
      } catch (e) {
        if (fromCaller(e) || e.message.startsWith(`${where}: `) || this.workers.dead) throw e;
        return this.synchronousError(where, method, sent(args), { zeroWeights: needsWeights },
          e);
      }
    });
  }

  // Throws what worker 0's synchronous object throws for `method` on
  // `args` (in `state`), if that is an error of `where`; else `error`, if
  // any. Returns when the synchronous object accepts the call and there is
  // no error to keep.
  async synchronousError(where, method, args, state, error) {
    let reproduced;
    try {
      await this.workers.all([0], () => ({ op: 'check', kind: this.#kind, config: this.#given,
        method, args, ...state }));
    } catch (e) {
      reproduced = e;
    }
    if (reproduced?.message.startsWith(`${where}: `)) throw reproduced;
    if (error !== undefined) throw named(error, where);
    if (reproduced !== undefined) throw reproduced;
  }
}

// Some hidden units of a layer's FFN, the one object a pool worker holds
// that the module's public API has not (FfnBinding in
// bindings/layer_binding.cc): createAttentionModule registers how its module
// makes one, and only pool-worker.js asks. The pool hands it weights and rows
// of a layer whose config and inputs the synchronous objects have accepted,
// so it checks nothing itself; C++ checks the weights' lengths and values.
import { glueMatrix } from './arguments.js';
import { unwrap } from './errors.js';

const makers = new WeakMap(); // module -> (config) => shard

export function registerFeedForwardShard(module, wasm) {
  makers.set(module, (config) => {
    const raw = new wasm.FfnBinding(config);
    try {
      unwrap(wasm, 'FeedForward', raw.takeError());
    } catch (e) {
      raw.delete();
      throw e;
    }
    const where = 'FeedForward';
    return {
      // { w1 [dModel, units], b1 [units], w2 [units, dModel], b2 [dModel] }
      setWeights: (w) => unwrap(wasm, `${where}.setWeights`,
        raw.setWeights({ ...w, w1: glueMatrix(w.w1), w2: glueMatrix(w.w2) })),
      // x { data: rows of dModel } -> { data: the rows' outputs }
      forward: (x) => ({ data: unwrap(wasm, `${where}.forward`, raw.forward(x.data)) }),
      dispose: () => raw.delete(),
    };
  });
}

// config { dModel, ffnDim (the shard's units), activation, backend }.
export function newFeedForwardShard(module, config) {
  return makers.get(module)(config);
}

// Training: the backward passes' results as JS objects, and the optimizers
// (SGD, Adam) that update an object's weights in place from its last
// backward. The glue exists in the training build only
// (bindings/training_binding.cc); the other builds refuse with the option
// that loads it.
import { checkObject, describe, optionalBoolean, optionalNumber } from './arguments.js';
import { unwrap } from './errors.js';
import { OPTION_KEYS } from './option-keys.js';
import { readTensor } from './tensors.js';
import { defineDispose, liveDuringCall, ownerOf } from './wasm-object.js';

// What an object an optimizer can step gives it: [TRAINABLE](where) returns
// { raw, step }, its Embind object (weights set, not disposed) and the
// OptimizerBinding method that steps that kind.
export const TRAINABLE = Symbol('trainable');

const NEEDS_TRAINING_BUILD = 'needs the training build: createAttentionModule({ training: true })';

// The glue function `name` of the training build, or an Error saying which
// build has it.
export function trainingGlue(wasm, where, name) {
  const f = wasm[name];
  if (typeof f !== 'function') {
    throw new Error(`${where}: ${NEEDS_TRAINING_BUILD} (this module is the ` +
      `${wasm.build()} build)`);
  }
  return f;
}

// A tensor of `shape` ([batch, ...rest] unbatched when rank is 2).
function tensor(data, rank, batch, rest) {
  return { data, shape: rank === 3 ? [batch, ...rest] : rest };
}

// backward(dOutput) of an object whose glue function is `name`: dOutput's
// types checked, the glue's gradients returned with `shape` making tensors
// of its dInput-like entries (the weights' stay Float32Arrays).
export function runBackward(wasm, where, name, raw, dOutput, shape) {
  const glue = trainingGlue(wasm, where, name);
  const d = readTensor(where, 'dOutput', dOutput);
  const g = unwrap(wasm, where, glue(raw, d));
  return shape(g, (data, features) =>
    tensor(data, d.rank, d.batch, [data.length / (d.batch * features), features]));
}

// The optimizers' options as given, types checked: C++ judges the values
// and owns the defaults (torch.optim's), which the glue leaves an omitted
// option at; the optimizer's options getter reports them.
function readOptions(where, o, numbers, booleans, keys) {
  checkObject(where, 'options', o, keys);
  const out = {};
  for (const key of numbers) out[key] = optionalNumber(where, `options.${key}`, o[key]);
  for (const key of booleans) out[key] = optionalBoolean(where, `options.${key}`, o[key]);
  return out;
}

function readSgdOptions(where, o) {
  return readOptions(where, o, ['lr', 'momentum', 'weightDecay'], ['nesterov'],
    OPTION_KEYS.SGDOptions);
}

function readAdamOptions(where, o) {
  return readOptions(where, o, ['lr', 'beta1', 'beta2', 'eps', 'weightDecay'],
    ['decoupledWeightDecay'], OPTION_KEYS.AdamOptions);
}

// The SGD and Adam classes of one module.
export function makeOptimizers(wasm, reclaimer) {
  function makeOptimizer(kind, glueKind, readOptions) {
    class Optimizer {
      #handle; // { raw, kind }: raw is null once disposed
      #stepped = new WeakSet(); // the JS objects stepped so far

      constructor(options = {}) {
        const where = kind;
        const o = readOptions(where, options);
        const Binding = wasm.OptimizerBinding;
        if (typeof Binding !== 'function') {
          throw new Error(`${where}: ${NEEDS_TRAINING_BUILD} (this module is the ` +
            `${wasm.build()} build)`);
        }
        const raw = new Binding(glueKind, o);
        try {
          unwrap(wasm, where, raw.takeError());
        } catch (e) {
          raw.delete();
          throw e;
        }
        this.#handle = { raw, kind };
        reclaimer.track(this, this.#handle);
      }

      get disposed() {
        return this.#handle.raw === null;
      }

      // The options it steps with: those given, C++'s defaults for the rest.
      get options() {
        const where = `${kind}.options`;
        if (!(#handle in this)) {
          throw new TypeError(`${where}: called on ${describe(this)}, not a ${kind}`);
        }
        if (this.#handle.raw === null) {
          throw new Error(`${where}: this ${kind} was disposed; create a new one`);
        }
        return unwrap(wasm, where, this.#handle.raw.options());
      }

      // One update of `target`'s weights from its last backward.
      step(target) {
        const where = `${kind}.step`;
        if (!(#handle in this)) {
          throw new TypeError(`${where}: called on ${describe(this)}, not a ${kind}`);
        }
        if (this.#handle.raw === null) {
          throw new Error(`${where}: this ${kind} was disposed; create a new one`);
        }
        const optimizer = liveDuringCall(this.#handle, () => `${where}: this ${kind} was ` +
          'disposed during the call; create a new one');
        if (target === null || typeof target !== 'object' || !(TRAINABLE in target)) {
          throw new TypeError(`${where}: target: expected a MultiHeadAttention, ` +
            'TransformerEncoderLayer, TransformerDecoderLayer, TransformerBlock, ' +
            `TransformerStack or TinyTransformer, got ${describe(target)}`);
        }
        const owner = ownerOf(target);
        if (owner !== undefined && owner.wasm !== wasm) {
          throw new Error(`${where}: target: this ${owner.kind} belongs to ` +
            'another module (another createAttentionModule() call, i.e. another wasm ' +
            'instance); step it with an optimizer of the module that created it');
        }
        const { raw, step } = target[TRAINABLE](where);
        // The C++ optimizer keys its moments by the object's address, which a
        // new object may reuse after another was disposed: the first step on
        // each JS object starts from fresh moments.
        const fresh = !this.#stepped.has(target);
        unwrap(wasm, where, optimizer[step](raw, fresh));
        this.#stepped.add(target);
      }

      dispose() {
        if (!(#handle in this)) {
          throw new TypeError(`${kind}.dispose: called on ${describe(this)}, not a ${kind}`);
        }
        reclaimer.release(this.#handle);
      }
    }
    Object.defineProperty(Optimizer, 'name', { value: kind });
    defineDispose(Optimizer);
    return Optimizer;
  }
  return {
    SGD: makeOptimizer('SGD', 'sgd', readSgdOptions),
    Adam: makeOptimizer('Adam', 'adam', readAdamOptions),
  };
}

// Objects that own wasm memory: the base class of MultiHeadAttention and the
// layers, the collector that frees undisposed objects, and dispose().
import { describe } from './arguments.js';
import { unwrap } from './errors.js';

const disposeSymbols = [Symbol.dispose, Symbol.for('Symbol.dispose')].filter(
  (s, i, all) => typeof s === 'symbol' && all.indexOf(s) === i);

// Frees the wasm object of every JS object that was garbage-collected without
// dispose() (Embind 3.1.6 frees nothing by itself), and warns once per kind
// and module: dispose() releases memory at once, the collector maybe never.
// Each object registers a handle { raw, kind } that it shares with its
// collector entry; dispose() deletes raw, sets it to null and unregisters.
// releaseAll() disposes every object still alive (module.dispose()).
export function makeReclaimer() {
  const warned = new Set();
  const live = new Set();
  const registry = typeof FinalizationRegistry === 'function'
    ? new FinalizationRegistry((handle) => {
      live.delete(handle);
      if (handle.raw === null) return;
      handle.raw.delete();
      handle.raw = null;
      if (warned.has(handle.kind)) return;
      warned.add(handle.kind);
      console.warn(`simd-attention: a ${handle.kind} was garbage-collected without ` +
        'dispose(); its wasm memory was freed then. Call dispose() (or declare it with ' +
        '`using`) when done with it');
    })
    : null;
  const release = (handle) => {
    live.delete(handle);
    if (handle.raw === null) return;
    handle.raw.delete();
    handle.raw = null;
    registry?.unregister(handle);
  };
  return {
    track(object, handle) {
      live.add(handle);
      registry?.register(object, handle, handle);
    },
    release,
    releaseAll() { for (const handle of [...live]) release(handle); },
  };
}

// obj[Symbol.dispose]() = obj.dispose(), under Symbol.dispose and under the
// Symbol.for('Symbol.dispose') that polyfills use where it is missing;
// returns Class.
export function defineDispose(Class) {
  const value = function disposeResource() { this.dispose(); };
  for (const symbol of disposeSymbols) {
    Object.defineProperty(Class.prototype, symbol, { value, writable: true, configurable: true });
  }
  return Class;
}

// The Embind object of `handle` ({ raw }) for the rest of one call: while
// the call reads its arguments, a getter among them may dispose of the
// object (handle.raw = null, the Embind object deleted), where Embind would
// throw its BindingError at the next use; this throws an Error of
// `message()` instead, at any use (a method, or being passed to another).
export function liveDuringCall(handle, message) {
  const check = () => {
    if (handle.raw === null) throw new Error(message());
  };
  return new Proxy(handle.raw, {
    get(raw, key) {
      check();
      const value = Reflect.get(raw, key, raw);
      if (typeof value !== 'function') return value;
      return (...args) => {
        check();
        return value.apply(raw, args);
      };
    },
  });
}

// The module (wasm instance) and kind of each object of the base below, so
// that an optimizer can tell another module's object from its own.
const owners = new WeakMap();

/** { wasm, kind } of an object of the base class, or undefined. */
export function ownerOf(object) {
  return owners.get(object);
}

// Members of the base class that its subclasses use; the package does not
// export them.
export const LIVE = Symbol('live');
export const READY = Symbol('ready');
export const INFO = Symbol('info');
export const WEIGHTS_SET = Symbol('weights set');

// What MultiHeadAttention and the layers share: one Embind object (created by
// the subclass from its checked config, then asked for its error and info()),
// config, kernels, the disposed and weights states, dispose. Subclass methods
// reach it through super[LIVE] / super[READY], which also check that `this`
// is of their class (a method called on another kind of object is a
// TypeError naming the method, not an Embind error).
export function makeWasmObjectBase(wasm, reclaimer, kind, weightMethods) {
  return class WasmObject {
    #handle; // { raw, kind }: raw is null once disposed or collected
    #info;
    #hasWeights = false;

    constructor(raw, extraInfo) {
      try {
        unwrap(wasm, kind, raw.takeError());
        this.#info = Object.freeze({ ...unwrap(wasm, kind, raw.info()), ...extraInfo });
      } catch (e) {
        raw.delete();
        throw e;
      }
      this.#handle = { raw, kind };
      reclaimer.track(this, this.#handle);
      owners.set(this, { wasm, kind });
    }

    /** The config with defaults filled in (and the backend). */
    get config() {
      const { kernels, ...config } = this.#info;
      return config;
    }

    /** The kernel table this object runs on, e.g. "highway:WASM". */
    get kernels() {
      return this.#info.kernels;
    }

    get disposed() {
      return this.#handle.raw === null;
    }

    // For the subclasses (private fields are per class).
    get [INFO]() {
      return this.#info;
    }

    [LIVE](where) {
      // Object(): `in` throws on a primitive, the `this` of a method called bare.
      if (!(#handle in Object(this))) {
        throw new TypeError(`${where}: called on ${describe(this)}, not a ${kind}`);
      }
      if (this.#handle.raw === null) {
        throw new Error(`${where}: this ${kind} was disposed; create a new one`);
      }
      return liveDuringCall(this.#handle, () => `${where}: this ${kind} was disposed during ` +
        'the call (by a getter of one of its arguments); create a new one');
    }

    [READY](where) {
      const raw = WasmObject.prototype[LIVE].call(this, where);
      if (!this.#hasWeights) {
        throw new Error(`${where}: no weights yet; call ${weightMethods} first`);
      }
      return raw;
    }

    [WEIGHTS_SET]() {
      this.#hasWeights = true;
    }

    dispose() {
      if (!(#handle in Object(this))) {
        throw new TypeError(`${kind}.dispose: called on ${describe(this)}, not a ${kind}`);
      }
      reclaimer.release(this.#handle);
    }
  };
}

// A pool's workers (pool-worker.js, each with its own wasm instance) and the
// requests they answer: starting them (Node worker_threads, module Web
// Workers), connecting each to every other, a request per worker or one call
// gathered by its first worker, the replies they owe, and the pool's death
// when one of them dies or the pool is disposed.
import { toMessage } from './pool-arguments.js';
import { rebuild } from './pool-join.js';
import { fromPackage, inViteDeps } from './vite-dev.js';

export const isNode = typeof process === 'object' && process !== null &&
  typeof process.versions?.node === 'string' && typeof window === 'undefined';

// A worker as the pool uses it: post(), terminate(), and Node's ref/unref
// (a Node worker keeps the process alive only while a call waits on it).
async function startWorker(onMessage, onDeath) {
  if (isNode) {
    const name = 'node:worker_threads';
    const { Worker } = await import(/* webpackIgnore: true */ /* @vite-ignore */ name);
    const worker = new Worker(new URL('./pool-worker.js', import.meta.url));
    worker.on('message', onMessage);
    worker.on('error', (e) => onDeath(`threw ${e?.message ?? e}`));
    worker.on('exit', (code) => onDeath(`exited with code ${code}`));
    return {
      post: (message, transfer) => worker.postMessage(message, transfer),
      terminate: () => worker.terminate(),
      ref: () => worker.ref(),
      unref: () => worker.unref(),
    };
  }
  // The literal form bundlers find and build; under Vite's dev server, whose
  // optimizer moved this module, the package's own file.
  const worker = inViteDeps ? new Worker(fromPackage('src/pool-worker.js'), { type: 'module' })
    : new Worker(new URL('./pool-worker.js', import.meta.url), { type: 'module' });
  worker.addEventListener('message', (event) => onMessage(event.data));
  worker.addEventListener('error', (event) => {
    event.preventDefault();
    onDeath(`failed: ${event.message || 'its script did not load'}`);
  });
  worker.addEventListener('messageerror', () => onDeath('sent a message that could not be read'));
  return {
    post: (message, transfer) => worker.postMessage(message, transfer),
    terminate: () => worker.terminate(),
    ref: () => {},
    unref: () => {},
  };
}

// The workers of one pool, and the replies they owe. A request never rejects
// for an error in the worker: it resolves to { value } or { error }, so that a
// call sent to several workers can wait for all of them. It rejects when the
// pool dies or is disposed.
export class Workers {
  #links = [];
  #pending = new Map(); // id -> { resolve, reject }
  #nextId = 1;
  #failure = null; // the Error every call gets once the pool is dead or disposed
  dead = false;

  static async start(count) {
    const workers = new Workers();
    for (let i = 0; i < count; ++i) {
      workers.#links.push(await startWorker((m) => workers.#reply(m),
        (why) => workers.#die(i, why)));
    }
    return workers;
  }

  // Gives each worker its index and a MessageChannel to every other one, on
  // which gathered calls send their parts (see gather).
  connect() {
    const peers = this.#links.map(() => []);
    for (let i = 0; i < this.count; ++i) {
      for (let j = i + 1; j < this.count; ++j) {
        const { port1, port2 } = new MessageChannel();
        peers[i].push([j, port1]);
        peers[j].push([i, port2]);
      }
    }
    return this.all(peers.map((_, i) => i), (i) => ({ op: 'connect', index: i, peers: peers[i] }),
      (i) => peers[i].map(([, port]) => port));
  }

  get count() { return this.#links.length; }

  // Rejects with the pool's failure once it is dead or disposed.
  check(where) {
    if (this.#failure !== null) throw new Error(`${where}: ${this.#failure}`);
  }

  // Its reply is registered only once the message is posted: a message that
  // cannot be sent rejects the request and leaves nothing waiting.
  request(worker, message, transfer = [], id = this.#nextId++) {
    if (this.#failure !== null) return Promise.reject(new Error(this.#failure));
    try {
      this.#post(worker, { ...message, id }, transfer);
    } catch (e) {
      return Promise.reject(e);
    }
    if (this.#pending.size === 0) for (const link of this.#links) link.ref();
    return new Promise((resolve, reject) => this.#pending.set(id, { resolve, reject }));
  }

  // The caller's data in the message (args, config, weights, target) as a
  // message carries it (toMessage). Their copies are plain data
  // (pool-arguments.js), so a failure here is the pool's own.
  #post(worker, message, transfer) {
    const fields = ['args', 'config', 'weights', 'target'].filter((k) => message[k] !== undefined);
    const { value, notes } = toMessage(Object.fromEntries(fields.map((k) => [k, message[k]])));
    try {
      this.#links[worker].post(notes.length === 0 ? message : { ...message, ...value, notes },
        transfer);
    } catch (e) {
      throw new TypeError(`the pool's workers cannot receive this call's arguments: ` +
        `${e?.message ?? e}`);
    }
  }

  // One call split over `workers`, sent to each of them at once: the first
  // gathers the others' parts and answers with them joined (pool-worker.js).
  // Its value, or its first error in worker order. The gatherer's request
  // goes last, so that none waits for a part that could not be sent.
  async gather(workers, message, transfer) {
    if (workers.length === 1) return (await this.all(workers, message, transfer))[0];
    if (this.#failure !== null) throw new Error(this.#failure);
    const id = this.#nextId++;
    const [first, ...rest] = workers;
    rest.forEach((w, i) => this.#post(w, { ...message(i + 1), gather: { id, to: first } },
      transfer?.(i + 1) ?? []));
    const { value, error } = await this.request(first,
      { ...message(0), gather: { id, from: rest } }, transfer?.(0), id);
    if (error !== undefined) throw rebuild(error);
    return value;
  }

  // The values of one request per worker in `workers`, or the first error.
  async all(workers, message, transfer) {
    const replies = await Promise.all(workers.map((w, i) =>
      this.request(w, message(i), transfer?.(i))));
    const failed = replies.find((r) => r.error !== undefined);
    if (failed) throw rebuild(failed.error);
    return replies.map((r) => r.value);
  }

  #reply({ id, value, error }) {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    if (this.#pending.size === 0) for (const link of this.#links) link.unref();
    pending.resolve(error === undefined ? { value } : { error });
  }

  #die(worker, why) {
    if (this.#failure !== null) return;
    this.dead = true;
    this.#end(`worker ${worker} of the attention pool ${why}; the pool is dead, ` +
      'create a new one');
  }

  dispose() {
    if (this.#failure === null) this.#end('this attention pool was disposed; create a new one');
  }

  terminate(worker) {
    this.#links[worker].terminate();
    this.#die(worker, 'was terminated');
  }

  #end(failure) {
    this.#failure = failure;
    for (const link of this.#links) link.terminate();
    for (const { reject } of this.#pending.values()) reject(new Error(failure));
    this.#pending.clear();
  }
}

// In Node, the script of each worker of a threaded build (thread-workers.js):
// runs emcc's <build>.worker.js, whose URL is the workerData, as if in a Web
// Worker. That script was generated for browsers (the builds leave Node out
// of emcc's ENVIRONMENT): it sets self.onmessage and calls postMessage, then
// imports the build's glue from the URL the loader gives emcc.

// Imported by a specifier bundlers do not follow, as every Node module of
// the package is.
const nodeWorkerThreads = 'node:worker_threads';
const { parentPort, workerData } =
  await import(/* webpackIgnore: true */ /* @vite-ignore */ nodeWorkerThreads);

globalThis.self = globalThis;
globalThis.postMessage = (message, transfer) => parentPort.postMessage(message, transfer);
await import(workerData);
// Messages wait in the port until this listener exists, so none arrives
// before emcc's handler is in place.
parentPort.on('message', (data) => globalThis.onmessage({ data }));

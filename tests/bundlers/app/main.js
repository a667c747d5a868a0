// The page: the test calls forwardOnPage(case), forwardInWorker(case) and
// forwardInPool(case).
import { forward } from './forward.js';
import { forwardInPool } from './pool.js';

window.forwardOnPage = forward;
window.forwardInPool = forwardInPool;

let worker;
window.forwardInWorker = (golden) => {
  // The form bundlers recognise, with the module type the worker needs.
  worker ??= new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  return new Promise((resolve, reject) => {
    worker.onmessage = (event) => resolve(event.data);
    worker.onerror = (event) => reject(new Error(`worker: ${event.message ?? 'did not load'}`));
    worker.postMessage(golden);
  });
};
document.body.dataset.ready = 'yes';

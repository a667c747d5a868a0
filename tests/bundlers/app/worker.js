// A module worker that runs the page's forward and answers with its result
// or its error's message.
import { forward } from './forward.js';

self.onmessage = async (event) => {
  try {
    self.postMessage(await forward(event.data));
  } catch (e) {
    self.postMessage({ error: String(e?.message ?? e) });
  }
};

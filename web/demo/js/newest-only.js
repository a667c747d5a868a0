// Runs an asynchronous task for the newest request only, for pages that
// recompute as the visitor types: one run at a time, requests made while one
// runs collapse into the newest, and a run's result (or error) is handed on
// only if no request came in after it started. So a result never paints over
// a newer one, and work never piles up behind a slow run.

/**
 * Returns request(): each call asks for task() to run once more. onResult
 * gets the result of a run no newer request has superseded, onError its error.
 */
export function newestOnly(task, { onResult, onError }) {
  let requests = 0;
  let wanted = false; // a request not yet started
  let running = false;

  async function drain() {
    running = true;
    while (wanted) {
      wanted = false;
      const ticket = requests;
      try {
        const result = await task();
        if (ticket === requests) onResult(result);
      } catch (e) {
        if (ticket === requests) onError(e);
      }
    }
    running = false;
  }

  return function request() {
    requests++;
    wanted = true;
    if (!running) drain();
  };
}

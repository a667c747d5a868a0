// newestOnly (web/demo/js/newest-only.js), which the explorer recomputes
// through: one run at a time, requests made meanwhile collapse into the
// newest, and only a run no newer request superseded hands on its result.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newestOnly } from '../../web/demo/js/newest-only.js';

// A task whose runs finish when the test says, each reporting the input it read.
function controlledTask(read) {
  const runs = [];
  const task = () => new Promise((resolve, reject) => runs.push({ input: read(), resolve, reject }));
  return { runs, task };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('a run superseded while it ran hands on nothing; the newest request runs once, after it', async () => {
  let input = 'a';
  const { runs, task } = controlledTask(() => input);
  const shown = [];
  const errors = [];
  const request = newestOnly(task, { onResult: (r) => shown.push(r), onError: (e) => errors.push(e.message) });

  request();
  assert.equal(runs.length, 1);
  // Three more requests while the first runs: no second run yet, then one.
  for (input of ['ab', 'abc', 'abcd']) request();
  assert.equal(runs.length, 1, 'runs never overlap');
  runs[0].resolve(runs[0].input);
  await settle();
  assert.deepEqual(shown, [], 'the superseded result is dropped');
  assert.equal(runs.length, 2, 'the requests made meanwhile run once');
  assert.equal(runs[1].input, 'abcd', 'and read the newest input');
  runs[1].resolve(runs[1].input);
  await settle();
  assert.deepEqual(shown, ['abcd']);

  // A superseded run's error is dropped too; the newest run's is handed on.
  request();
  request();
  runs[2].reject(new Error('old'));
  await settle();
  runs[3].reject(new Error('new'));
  await settle();
  assert.deepEqual(errors, ['new']);
  assert.deepEqual(shown, ['abcd']);
  assert.equal(runs.length, 4);
});

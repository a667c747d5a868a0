// Child process of run.js (forked, so it is part of the same process tree but
// onnxruntime-node and onnxruntime-web never share one onnxruntime-common
// registry): onnxruntime-node, CPU execution provider, 1 intra-op thread
// (SA_BENCH_THREADS in the threads run) and 1 inter-op thread, on the same
// graphs as onnxruntime-web (on one thread, S1, S2, C1 and D1 also its
// float16 and int8 graphs). Checks each output against ours (sent by the
// parent; the typed graphs within their bound, storage.js), then times
// the graphs interleaved.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { WORKLOADS, makeData } from '../../web/bench-kit/workloads.js';
import { createOrtNodeSession } from './peers/ortnode.js';
import { GRAPHS, TYPED_GRAPHS, PEER_THREADS } from './peers/ortweb.js';
import { STORAGE_WORKLOADS, PRODUCTS, checkStored } from './storage.js';
import { interleave, summarize, maxAbsDiff } from '../../web/bench-kit/timing.js';

const require = createRequire(import.meta.url);

async function main({ names, references, timing, tolerance }) {
  const ort = require('onnxruntime-node');
  const results = [];
  for (const name of names) {
    const w = WORKLOADS.find((x) => x.name === name);
    const data = makeData(w);
    const peers = [];
    const entries = [];
    const typed = PEER_THREADS === 1 && STORAGE_WORKLOADS.includes(name) ? Object.keys(TYPED_GRAPHS) : [];
    for (const graph of ['contrib', 'plain', ...typed]) {
      const label = `ort-node ${GRAPHS[graph]}`;
      const type = TYPED_GRAPHS[graph];
      try {
        const { session, feeds } = await createOrtNodeSession(ort, data, graph);
        const peer = {
          name: label,
          session,
          async run() {
            return (await session.run(feeds)).output.data;
          },
        };
        const out = await peer.run();
        const diff = references[name] ? maxAbsDiff(out, references[name]) : null;
        const entry = { name: label, maxAbsDiff: diff };
        if (type && references[name]) {
          Object.assign(entry, { storage: { weights: type } }, checkStored(label, type,
            type === 'int8' ? PRODUCTS.ortInt8 : PRODUCTS.ortFp16, out, references[name]));
        } else if (diff !== null && !(diff <= tolerance)) {
          entry.error = `output differs from ours by ${diff}`;
        }
        if (entry.error) {
          await session.release();
        } else {
          peers.push(peer);
        }
        entries.push(entry);
      } catch (e) {
        entries.push({ name: label, error: String(e.message ?? e).split('\n')[0] });
      }
    }
    if (peers.length > 0) {
      const { samples, rounds } = await interleave(peers, timing);
      for (const e of entries) {
        if (samples.has(e.name)) Object.assign(e, summarize(samples.get(e.name)), { rounds });
      }
    }
    for (const p of peers) await p.session.release();
    results.push({ workload: name, entries });
  }
  const pkg = path.join(path.dirname(require.resolve('onnxruntime-node')), '..', 'package.json');
  return { version: JSON.parse(readFileSync(pkg, 'utf8')).version, results };
}

process.once('message', (msg) => {
  main(msg).then(
    (r) => process.send({ ok: true, ...r }, () => process.exit(0)),
    (e) => process.send({ ok: false, error: String(e.stack ?? e) }, () => process.exit(1)),
  );
});

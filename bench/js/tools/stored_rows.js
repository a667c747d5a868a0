// What the storage-type tools (int8_prefill.js, q4_decode.js) share: each
// entry's output checked against the reference (ours in float32), and the
// entries timed interleaved, one thread, into a table of median and least
// ms with ratios against the entries its columns name.
import os from 'node:os';
import { interleave, maxAbsDiff, summarize } from '../../../web/bench-kit/timing.js';
import { PRODUCTS, checkStored } from '../storage.js';

const TOLERANCE = 1e-3;

/**
 * Runs each entry ({ name?, peer, weights?, products?, error? }; its name
 * by default the peer's) and sets its maxAbsDiff against `reference`, and
 * an error where it is off: float32 entries within 1e-3, those of
 * `weights` within that type's bound (storage.js). An entry already in
 * error stays so.
 */
export async function checkEntries(workload, entries, reference) {
  for (const e of entries) {
    e.name ??= e.peer.name;
    if (e.error) continue;
    const out = await e.peer.run();
    if (!e.weights) {
      e.maxAbsDiff = maxAbsDiff(out, reference);
      if (!(e.maxAbsDiff <= TOLERANCE)) {
        e.error = `output differs from ours in float32 by ${e.maxAbsDiff}`;
      }
    } else {
      const products = e.products ?? PRODUCTS.weights;
      Object.assign(e, checkStored(e.name, e.weights, products, out, reference));
    }
    if (e.error) console.error(`${workload} ${e.name}: ${e.error}`);
  }
}

/** The column of ours in a stored type set against ours in float32 on the same build. */
export function oursFloat32Column(entries) {
  return {
    title: 'vs ours f32 (same build)',
    against: (e) => (e.ours && e.weights
      ? entries.find((x) => x.ours && x.build === e.build && !x.weights) : undefined),
  };
}

/**
 * Times the entries without an error interleaved within `budgetS` seconds
 * and prints a Markdown table: median and least ms (`digits` decimals), then
 * per column ({ title, against: (entry) => the entry it is set against, or
 * undefined }) the ratio of medians and, in brackets, of the least.
 */
export async function timeAndTabulate(workload, entries, budgetS, columns, digits = 2) {
  const timed = entries.filter((x) => !x.error);
  const calls = timed.map((e) => ({ name: e.name, run: () => e.peer.run() }));
  const { samples } = await interleave(calls, {
    warmupMs: 300, warmupCalls: 3, slotMs: 100, budgetMs: budgetS * 1000, minRounds: 5,
    maxRounds: 60,
  }, { log: (s) => console.error(`${workload}: ${s}`) });
  const median = (e) => summarize(samples.get(e.name)).median;
  const least = (e) => Math.min(...samples.get(e.name));
  const ratio = (a, b, f) => (b && !b.error ? `${(f(b) / f(a)).toFixed(2)}x` : '');
  console.log(`\n| ${workload} | median ms | least ms | ` +
    `${columns.map((c) => c.title).join(' | ')} | max abs diff from the reference |`);
  console.log(`|---|---:|---:|${'---:|'.repeat(columns.length)}---:|`);
  for (const e of entries) {
    if (e.error) {
      console.log(`| ${e.name} | ${e.error} |${'|'.repeat(columns.length + 2)}`);
      continue;
    }
    const both = (b) => (b ? `${ratio(e, b, median)} (${ratio(e, b, least)})` : '');
    console.log(`| ${e.name} | ${median(e).toFixed(digits)} | ${least(e).toFixed(digits)} | ` +
      `${columns.map((c) => both(c.against(e))).join(' | ')} | ${e.maxAbsDiff.toExponential(1)} |`);
  }
}

/** The tables' footnote: how busy the machine was. */
export function printLoadAverage() {
  console.log(`\nload average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}; ` +
    'ratios by medians (by the least)');
}

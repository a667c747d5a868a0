// The demo server's start-up list (web/demo/server.mjs run as a program):
// every page the demo index links from its cards, in the index's order, each
// URL served as an HTML page.
//
//   node --test tests/server/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEMO_PAGES } from '../../web/demo/server.mjs';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const demoDir = path.join(repoRoot, 'web', 'demo');

// The hrefs of the index's cards (<a class="card" href="...">).
function indexCards() {
  const html = fs.readFileSync(path.join(demoDir, 'index.html'), 'utf8');
  return [...html.matchAll(/<a\s+class="card"\s+href="([^"]+)"/g)].map((m) => m[1]);
}

// Starts the server on a free port and resolves to { lines, stop } once it
// has printed its list (the line that says how to stop it).
function startProgram() {
  const child = spawn(process.execPath, [path.join(demoDir, 'server.mjs'), '--port', '0'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  const stop = () => new Promise((resolve) => {
    if (child.exitCode !== null) resolve();
    else {
      child.once('exit', resolve);
      child.kill('SIGTERM');
    }
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('Ctrl-C')) resolve({ lines: out.split('\n'), stop });
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code}) before its list: ${out}${err}`)));
  });
}

test("the list names every card of the demo index, in the index's order", () => {
  const cards = indexCards();
  assert.ok(cards.length >= 4, `cards found in index.html: ${cards}`);
  assert.deepEqual(DEMO_PAGES.map(([, file]) => file), cards);
  for (const file of cards) assert.ok(fs.existsSync(path.join(demoDir, file)), file);
});

test('the server prints that list when it starts, and serves each page', async () => {
  const { lines, stop } = await startProgram();
  try {
    const urls = lines.flatMap((l) => l.match(/https?:\/\/\S+\/web\/demo\/\S+\.html/g) ?? []);
    assert.deepEqual(urls.map((u) => path.basename(new URL(u).pathname)), indexCards());
    for (const url of urls) {
      const response = await fetch(url.replace('localhost', '127.0.0.1'));
      assert.equal(response.status, 200, url);
      assert.match(response.headers.get('content-type'), /^text\/html/, url);
      await response.arrayBuffer();
    }
  } finally {
    await stop();
  }
});

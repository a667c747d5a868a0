// The demo server (web/demo/server.mjs) against symlinks and special files,
// on a folder of its own in the temporary directory, loopback only:
// symlinks (to a file or a folder, inside the served folder or out of it),
// FIFOs and sockets are refused, and a folder swapped for a symlink to an
// outside folder while requests run never serves a byte of the file there.
//
//   node --test tests/server/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { startServer } from '../../web/demo/server.mjs';

// What the served files hold, and what the outside file holds: no byte of
// OUTSIDE occurs in INSIDE, so a single leaked byte shows.
const INSIDE = 'a'.repeat(3000);
const OUTSIDE = 'Z'.repeat(5000);
const RACE_REQUESTS = 2000;
const CONCURRENCY = 8;

let dir;
let root;
let outside;
let server;
let socketServer;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sa-server-test-'));
  root = path.join(dir, 'served');
  outside = path.join(dir, 'outside');
  fs.mkdirSync(path.join(root, 'folder'), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(root, 'plain.txt'), INSIDE);
  fs.writeFileSync(path.join(root, 'empty.txt'), '');
  fs.writeFileSync(path.join(root, 'folder', 'passwd'), INSIDE);
  fs.writeFileSync(path.join(outside, 'passwd'), OUTSIDE);
  fs.symlinkSync(path.join(root, 'plain.txt'), path.join(root, 'link-inside.txt'));
  fs.symlinkSync(path.join(outside, 'passwd'), path.join(root, 'link-outside.txt'));
  fs.symlinkSync(path.join(root, 'folder'), path.join(root, 'linked-folder'));
  fs.symlinkSync(outside, path.join(root, 'linked-outside'));
  execFileSync('mkfifo', [path.join(root, 'fifo.txt')]);
  socketServer = net.createServer();
  await new Promise((resolve) => socketServer.listen(path.join(root, 'socket.txt'), resolve));
  server = await startServer({ port: 0, root });
});

after(async () => {
  await server?.close();
  await new Promise((resolve) => (socketServer ? socketServer.close(resolve) : resolve()));
  fs.rmSync(dir, { recursive: true, force: true });
});

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
after(() => agent.destroy());

function get(rawPath, method = 'GET') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.port, path: rawPath, method, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('latin1') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

test('regular files (also empty ones) and folders are served', async () => {
  const file = await get('/web/plain.txt');
  assert.equal(file.status, 200);
  assert.equal(file.body, INSIDE);
  assert.equal(file.headers['content-length'], String(INSIDE.length));
  assert.equal((await get('/web/folder/passwd')).body, INSIDE);
  const empty = await get('/web/empty.txt');
  assert.equal(empty.status, 200);
  assert.equal(empty.body, '');
  assert.equal(empty.headers['content-length'], '0');
  const head = await get('/web/plain.txt', 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
  const folder = await get('/web/folder');
  assert.equal(folder.status, 301);
  assert.equal(folder.headers.location, '/web/folder/');
});

test('symlinks, FIFOs and sockets are refused', async () => {
  for (const p of ['/web/link-inside.txt', '/web/link-outside.txt', '/web/linked-folder/passwd',
    '/web/linked-outside/passwd', '/web/linked-folder', '/web/linked-outside', '/web/fifo.txt',
    '/web/socket.txt', '/web/missing.txt', '/web//plain.txt']) {
    const r = await get(p);
    assert.equal(r.status, 404, `${p} gave ${r.status}`);
    assert.ok(!r.body.includes('Z'), `${p} served bytes of the outside file`);
  }
});

test(`a folder swapped for a symlink during ${RACE_REQUESTS} requests never serves the outside file`, async () => {
  const swapped = path.join(root, 'swap');
  const parkedFolder = path.join(root, 'parked-folder');
  const parkedLink = path.join(root, 'parked-link');
  fs.mkdirSync(swapped);
  fs.writeFileSync(path.join(swapped, 'passwd'), INSIDE);
  fs.symlinkSync(outside, parkedLink);
  // The swapper runs on its own thread, so that the swaps land between the
  // server's checks and reads (which run on the event loop and libuv's
  // thread pool): `swap` is a folder, then a symlink to `outside`, again
  // and again, until told to stop.
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const swapper = new Worker(`
    const { renameSync } = require('node:fs');
    const { workerData: { swapped, parkedFolder, parkedLink, stop } } = require('node:worker_threads');
    let swaps = 0;
    while (Atomics.load(stop, 0) === 0) {
      renameSync(swapped, parkedFolder);
      renameSync(parkedLink, swapped);
      renameSync(swapped, parkedLink);
      renameSync(parkedFolder, swapped);
      swaps++;
    }
    require('node:worker_threads').parentPort.postMessage(swaps);
  `, { eval: true, workerData: { swapped, parkedFolder, parkedLink, stop } });
  const swaps = new Promise((resolve, reject) => {
    swapper.once('message', resolve);
    swapper.once('error', reject);
  });

  const statuses = new Map();
  let leaked = 0; // responses with a byte of the outside file
  let wrong = 0; // 200s with other than the inside file, other statuses
  let failed = 0; // requests that got no well-formed response
  let next = 0;
  async function client() {
    while (next < RACE_REQUESTS) {
      next++;
      let r;
      try {
        r = await get('/web/swap/passwd');
      } catch {
        failed++;
        continue;
      }
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.body.includes('Z')) leaked++;
      if (r.status === 200 ? r.body !== INSIDE : r.status !== 404) wrong++;
    }
  }
  try {
    await Promise.all(Array.from({ length: CONCURRENCY }, client));
  } finally {
    Atomics.store(stop, 0, 1);
  }
  const swapCount = await swaps;
  assert.equal(leaked, 0, 'responses with bytes of the outside file');
  assert.equal(wrong, 0, `responses other than the inside file or 404 (${[...statuses]})`);
  assert.equal(failed, 0, 'requests without a well-formed response');
  // The race ran: requests were answered while the folder was there and
  // while it was not (a symlink or, between two renames, nothing), and the
  // swapper kept swapping throughout.
  assert.ok((statuses.get(200) ?? 0) > 0, `no request found the folder (${[...statuses]})`);
  assert.ok((statuses.get(404) ?? 0) > 0, `no request met the symlink (${[...statuses]})`);
  assert.ok(swapCount > 100, `only ${swapCount} swaps`);
});

#!/usr/bin/env node
// A tiny static server for the demos (web/demo/), Node's own http only.
//
//   node web/demo/server.mjs [--port 8080] [--host 127.0.0.1] [--no-isolation]   (or PORT=...)
//
// It serves the repository's web/ folder (the npm package: index.js, dist/,
// demo/, and bench-kit/, which the live benchmark runs) at /web/, so the
// pages import the package as ../index.js and the package finds its .wasm
// files where it looks by default (dist/ next to index.js). Nothing else of
// the repository is reachable: paths are decoded and anything with a `..`,
// a `.` or a dot-file segment is refused; then the file is opened first and
// checked after (see openServed), so that no symlink, swapped in before or
// during a request, leads anywhere else, and only regular files are sent.
//
// Beside web/, the server sends the few files of the repository's
// node_modules that a page imports (VENDOR_FILES, at their path under the
// repository, where the page's import map looks): the tokenizer library the
// explorer reads a model's tokenizer.json with. Nothing else of
// node_modules is reachable.
//
// Every response carries Cross-Origin-Opener-Policy: same-origin and
// Cross-Origin-Embedder-Policy: require-corp (cross-origin isolation, which a
// threaded wasm build will need for SharedArrayBuffer), unless the server is
// started without isolation (--no-isolation, startServer({ isolated: false }))
// to serve the pages as most sites do, e.g. to show that the worker pool needs
// none; .wasm files are sent as application/wasm so that
// WebAssembly.instantiateStreaming works.
import http from 'node:http';
import { constants, existsSync } from 'node:fs';
import { open, readlink, realpath, lstat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';

const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const NODE_MODULES = path.resolve(WEB, '..', 'node_modules');

/** The files of the repository's node_modules the pages import, served at /node_modules/<file>. */
export const VENDOR_FILES = ['@huggingface/tokenizers/dist/tokenizers.min.mjs'];
const VENDOR_PREFIX = '/node_modules/';

/** Where the demos live; `/` redirects here. */
export const DEMO_PATH = '/web/demo/';

/**
 * The demos the server lists when it starts: the cards of the demo index
 * (web/demo/index.html), in its order, as [label, file in web/demo/].
 */
export const DEMO_PAGES = [
  ['shapes walk-through', 'shapes.html'],
  ['attention explorer', 'explorer.html'],
  ['live benchmark', 'bench.html'],
  ['training heads', 'training.html'],
];
const PREFIX = '/web/';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.d.ts': 'text/plain; charset=utf-8',
};

const ISOLATION_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};
const SECURITY_HEADERS = {
  'Cross-Origin-Resource-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
};

function contentType(file) {
  const base = path.basename(file);
  if (base.endsWith('.d.ts')) return TYPES['.d.ts'];
  return TYPES[path.extname(base).toLowerCase()] ?? 'application/octet-stream';
}

/**
 * The path below the served folder that a request path names ('' + index.html
 * for a folder), or null: decoded, no NUL or backslash, no empty, `.`, `..`
 * or dot-file segment (which also keeps out .git and .npmignore).
 */
function requestedPath(urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\') || !decoded.startsWith(PREFIX)) return null;
  let rel = decoded.slice(PREFIX.length);
  if (rel === '' || rel.endsWith('/')) rel += 'index.html';
  if (rel.split('/').some((s) => s === '' || s.startsWith('.'))) return null;
  return { decoded, rel };
}

// Linux names the file behind a descriptor in /proc/self/fd: the path the
// kernel resolved at open, whatever happened to the names since.
const PROC_FD = existsSync('/proc/self/fd') ? '/proc/self/fd' : null;

/**
 * Opens `rel` below the real path of `root` and checks what was opened, not
 * the name: never a symlink (O_NOFOLLOW for the last segment; for the
 * others, the opened file's path must be exactly root/rel), and a regular
 * file or a folder. O_NONBLOCK keeps a FIFO from blocking the open.
 * Resolves to { handle, size, file } (the caller closes handle),
 * { directory: true }, or null.
 */
async function openServed(root, rel) {
  const realRoot = await realpath(root);
  const expected = path.join(realRoot, rel);
  let handle;
  try {
    handle = await open(expected, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  let keep = false;
  try {
    const opened = PROC_FD ? await readlink(`${PROC_FD}/${handle.fd}`) : await lstatWalk(realRoot, rel, handle);
    if (opened !== expected) return null;
    const s = await handle.stat();
    if (s.isDirectory()) return { directory: true };
    if (!s.isFile()) return null;
    keep = true;
    return { handle, size: s.size, file: expected };
  } catch {
    return null;
  } finally {
    if (!keep) await handle.close();
  }
}

// Without /proc (macOS, the BSDs): no segment may be a symlink, and the
// opened file must be the one the path names now. Narrower than the /proc
// check (a swap and a swap back between open and lstat go unseen), which is
// why Linux uses that.
async function lstatWalk(realRoot, rel, handle) {
  let at = realRoot;
  for (const segment of rel.split('/')) {
    at = path.join(at, segment);
    if ((await lstat(at)).isSymbolicLink()) return null;
  }
  const [named, opened] = await Promise.all([lstat(at), handle.stat()]);
  return named.dev === opened.dev && named.ino === opened.ino ? at : null;
}

/**
 * Maps a request path to an open file of the served folder (default web/):
 * { handle, size, file } (the caller closes handle), { redirect } for a folder
 * named without its trailing slash, or null.
 */
export async function resolveRequestPath(urlPath, root = WEB) {
  const req = requestedPath(urlPath);
  if (req === null) return null;
  const found = await openServed(root, req.rel);
  if (found?.directory) return { redirect: `${req.decoded.replace(/\/?$/, '/')}` };
  return found;
}

// The headers of every response: security, and isolation unless turned off.
function baseHeaders(isolated) {
  return isolated ? { ...ISOLATION_HEADERS, ...SECURITY_HEADERS } : SECURITY_HEADERS;
}

function send(res, base, status, body, headers = {}) {
  res.writeHead(status, {
    ...base,
    'Content-Type': 'text/plain; charset=utf-8',
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(body);
}

async function handle(req, res, root, base, log) {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    send(res, base, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
    return 405;
  }
  let url;
  try {
    url = new URL(req.url, 'http://localhost');
  } catch {
    send(res, base, 400, 'bad request\n');
    return 400;
  }
  if (url.pathname === '/' || url.pathname === '/index.html' || url.pathname === '/web' ||
      url.pathname === '/web/demo') {
    send(res, base, 302, `see ${DEMO_PATH}\n`, { Location: DEMO_PATH });
    return 302;
  }
  const vendor = url.pathname.startsWith(VENDOR_PREFIX) ? url.pathname.slice(VENDOR_PREFIX.length) : null;
  const found = vendor !== null
    ? (VENDOR_FILES.includes(vendor) ? await openServed(NODE_MODULES, vendor) : null)
    : await resolveRequestPath(url.pathname, root);
  if (found === null) {
    send(res, base, 404, 'not found\n');
    return 404;
  }
  if (found.redirect) {
    send(res, base, 301, `see ${found.redirect}\n`, { Location: found.redirect + url.search });
    return 301;
  }
  res.writeHead(200, {
    ...base,
    'Content-Type': contentType(found.file),
    'Content-Length': found.size,
    // The demos are development pages: always the latest build.
    'Cache-Control': 'no-cache',
  });
  if (req.method === 'HEAD' || found.size === 0) {
    await found.handle.close();
    res.end();
    return 200;
  }
  // At most the size announced: a file that grows meanwhile is cut there.
  const stream = found.handle.createReadStream({ start: 0, end: found.size - 1 });
  pipeline(stream, res, (e) => {
    if (e && e.code !== 'ERR_STREAM_PREMATURE_CLOSE') log?.(`server: reading ${url.pathname}: ${e.message}`);
  });
  return 200;
}

/**
 * Starts the server; resolves to { server, port, url, close() } once it
 * listens. port 0 picks a free port. quiet: no request log. root: the
 * folder served at /web/ (default: the repository's web/; the tests serve
 * their own). isolated: false leaves out COOP and COEP (the page is then
 * not cross-origin isolated, as most pages are).
 */
export function startServer({ port = 8080, host = '127.0.0.1', quiet = true, root = WEB,
  isolated = true } = {}) {
  const log = quiet ? null : (m) => console.log(m);
  const base = baseHeaders(isolated);
  const server = http.createServer((req, res) => {
    handle(req, res, root, base, log).then(
      (status) => log?.(`${status} ${req.method} ${req.url}`),
      (e) => {
        log?.(`server: ${req.method} ${req.url}: ${e.stack ?? e}`);
        if (!res.headersSent) send(res, base, 500, 'internal error\n');
        else res.destroy();
      });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const actual = server.address().port;
      const shown = host === '127.0.0.1' || host === '::1' || host === '0.0.0.0' || host === '::'
        ? 'localhost' : host;
      resolve({
        server,
        port: actual,
        url: `http://${shown}:${actual}/`,
        close: () => new Promise((r) => {
          server.closeAllConnections?.();
          server.close(() => r());
        }),
      });
    });
  });
}

function parseArgs(argv) {
  const opts = { port: process.env.PORT ? Number(process.env.PORT) : 8080, host: '127.0.0.1',
    isolated: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const eq = a.indexOf('=');
      if (eq >= 0) return a.slice(eq + 1);
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--port' || a.startsWith('--port=') || a === '-p') opts.port = Number(value());
    else if (a === '--host' || a.startsWith('--host=')) opts.host = value();
    else if (a === '--no-isolation') opts.isolated = false;
    else if (a === '--help' || a === '-h') {
      console.log('usage: node web/demo/server.mjs [--port N] [--host ADDR] [--no-isolation]   ' +
        '(PORT=N also works)');
      process.exit(0);
    } else throw new Error(`unknown option ${a} (try --help)`);
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) {
    throw new Error(`--port: expected an integer 0..65535, got ${opts.port}`);
  }
  return opts;
}

const isMain = process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href;
if (isMain) {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`server: ${e.message}`);
    process.exit(2);
  }
  startServer({ ...opts, quiet: !process.env.SA_DEMO_LOG }).then(({ url, port }) => {
    console.log(`simd-attention demos: ${url}  (serving web/ at /web/, pages at ${DEMO_PATH})`);
    const width = Math.max(...DEMO_PAGES.map(([label]) => label.length));
    for (const [label, file] of DEMO_PAGES) {
      console.log(`  ${label.padEnd(width)}  ${new URL(`${DEMO_PATH}${file}`, url).href}`);
    }
    console.log('Ctrl-C stops the server.');
    if (port !== opts.port && opts.port !== 0) console.log(`(asked for port ${opts.port})`);
  }, (e) => {
    const hint = e.code === 'EADDRINUSE' ? ' (in use; set PORT or --port)' : '';
    console.error(`server: cannot listen on ${opts.host}:${opts.port}: ${e.message}${hint}`);
    process.exit(1);
  });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
}

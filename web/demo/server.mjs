#!/usr/bin/env node
// A tiny static server for the demos (web/demo/), Node's own http only.
//
//   node web/demo/server.mjs [--port 8080] [--host 127.0.0.1]   (or PORT=...)
//
// It serves the repository's web/ folder (the npm package: index.js, dist/,
// demo/) at /web/, so the pages import the package as ../index.js and the
// package finds its .wasm files where it looks by default (dist/ next to
// index.js). Besides web/ it serves only the browser-side modules of the
// benchmark harness (bench/js/*.js and bench/js/peers/*.js: workload
// definitions, timing, the plain-JS loop), which the live benchmark reuses.
// Nothing else of the repository is reachable: paths are decoded, normalised
// and checked against those roots (also after resolving symlinks), and
// anything with a `..` or a dot-file segment is refused.
//
// Every response carries Cross-Origin-Opener-Policy: same-origin and
// Cross-Origin-Embedder-Policy: require-corp (cross-origin isolation, which a
// threaded wasm build will need for SharedArrayBuffer); .wasm files are sent
// as application/wasm so that WebAssembly.instantiateStreaming works.
import http from 'node:http';
import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where the demos live; `/` redirects here. */
export const DEMO_PATH = '/web/demo/';

// URL prefix -> folder, and which files below it may be served.
const MOUNTS = [
  { prefix: '/web/', dir: path.join(REPO, 'web'), allow: () => true },
  {
    prefix: '/bench/js/',
    dir: path.join(REPO, 'bench', 'js'),
    // Only the harness's own modules (no node_modules, native/ or tools/).
    allow: (rel) => /^(peers\/)?[a-z_]+\.js$/.test(rel),
  },
];

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

const SECURITY_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
};

function contentType(file) {
  const base = path.basename(file);
  if (base.endsWith('.d.ts')) return TYPES['.d.ts'];
  return TYPES[path.extname(base).toLowerCase()] ?? 'application/octet-stream';
}

/**
 * Maps a request path to a file inside one of the mounts, or null. Exported
 * for the tests.
 */
export async function resolveRequestPath(urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  const segments = decoded.split('/');
  // No "..", no "." and no dot-files anywhere (also catches ".git").
  if (segments.some((s) => s.startsWith('.'))) return null;
  const mount = MOUNTS.find((m) => decoded.startsWith(m.prefix));
  if (!mount) return null;
  let rel = decoded.slice(mount.prefix.length);
  if (rel === '' || rel.endsWith('/')) rel += 'index.html';
  if (!mount.allow(rel)) return null;
  const file = path.resolve(mount.dir, rel);
  if (!file.startsWith(mount.dir + path.sep)) return null;
  // Symlinks must not lead out of the mount either.
  try {
    const [real, realDir] = await Promise.all([realpath(file), realpath(mount.dir)]);
    if (!real.startsWith(realDir + path.sep)) return null;
    const s = await stat(real);
    if (s.isDirectory()) return { redirect: `${decoded.replace(/\/?$/, '/')}` };
    if (!s.isFile()) return null;
    return { file: real, size: s.size };
  } catch {
    return null;
  }
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'Content-Type': 'text/plain; charset=utf-8',
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(body);
}

async function handle(req, res, log) {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    send(res, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
    return 405;
  }
  let url;
  try {
    url = new URL(req.url, 'http://localhost');
  } catch {
    send(res, 400, 'bad request\n');
    return 400;
  }
  if (url.pathname === '/' || url.pathname === '/index.html' || url.pathname === '/web' ||
      url.pathname === '/web/demo') {
    send(res, 302, `see ${DEMO_PATH}\n`, { Location: DEMO_PATH });
    return 302;
  }
  const found = await resolveRequestPath(url.pathname);
  if (found === null) {
    send(res, 404, 'not found\n');
    return 404;
  }
  if (found.redirect) {
    send(res, 301, `see ${found.redirect}\n`, { Location: found.redirect + url.search });
    return 301;
  }
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'Content-Type': contentType(found.file),
    'Content-Length': found.size,
    // The demos are development pages: always the latest build.
    'Cache-Control': 'no-cache',
  });
  if (req.method === 'HEAD') {
    res.end();
    return 200;
  }
  const stream = createReadStream(found.file);
  stream.on('error', (e) => {
    log?.(`server: reading ${found.file}: ${e.message}`);
    res.destroy(e);
  });
  stream.pipe(res);
  return 200;
}

/**
 * Starts the server; resolves to { server, port, url, close() } once it
 * listens. port 0 picks a free port. quiet: no request log.
 */
export function startServer({ port = 8080, host = '127.0.0.1', quiet = true } = {}) {
  const log = quiet ? null : (m) => console.log(m);
  const server = http.createServer((req, res) => {
    handle(req, res, log).then(
      (status) => log?.(`${status} ${req.method} ${req.url}`),
      (e) => {
        log?.(`server: ${req.method} ${req.url}: ${e.stack ?? e}`);
        if (!res.headersSent) send(res, 500, 'internal error\n');
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
  const opts = { port: process.env.PORT ? Number(process.env.PORT) : 8080, host: '127.0.0.1' };
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
    else if (a === '--help' || a === '-h') {
      console.log('usage: node web/demo/server.mjs [--port N] [--host ADDR]   (PORT=N also works)');
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
    console.log(`  shapes walk-through  ${url}web/demo/shapes.html`);
    console.log(`  attention explorer   ${url}web/demo/explorer.html`);
    console.log(`  live benchmark       ${url}web/demo/bench.html`);
    console.log('Ctrl-C stops the server.');
    if (port !== opts.port && opts.port !== 0) console.log(`(asked for port ${opts.port})`);
  }, (e) => {
    const hint = e.code === 'EADDRINUSE' ? ' (in use; set PORT or --port)' : '';
    console.error(`server: cannot listen on ${opts.host}:${opts.port}: ${e.message}${hint}`);
    process.exit(1);
  });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
}

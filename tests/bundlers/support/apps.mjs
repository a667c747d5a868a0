// The consumer app as a user has it: tests/bundlers/app/ copied into a fresh
// folder, with the package installed there from the tarball `npm pack` makes
// of web/ (offline: it has no dependencies), and what a bundler emits from it.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..', '..');
const webDir = path.join(repoRoot, 'web');

function run(cmd, args, cwd) {
  return execFileSync(cmd, args, {
    cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_update_notifier: 'false', NODE_OPTIONS: '' },
  });
}

// Packs web/ into `tmp` and installs it into tmp/app next to a copy of app/.
export function makeApp(tmp) {
  const [packed] = JSON.parse(run('npm', ['pack', webDir, '--json', '--pack-destination', tmp],
    repoRoot));
  const app = path.join(tmp, 'app');
  fs.cpSync(path.join(here, '..', 'app'), app, { recursive: true });
  fs.writeFileSync(path.join(app, 'package.json'),
    JSON.stringify({ name: 'app', private: true, type: 'module' }));
  run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock',
    path.join(tmp, packed.filename)], app);
  return app;
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

// The files of the installed package's dist/ by content: sha256 -> name.
export function packageDistFiles(app) {
  const dist = path.join(app, 'node_modules', 'simd-attention', 'dist');
  return new Map(fs.readdirSync(dist).map((f) => [sha256(fs.readFileSync(path.join(dist, f))), f]));
}

// A string of the emcc glue that minifiers keep, once per copy of it, and
// one of a threaded build's worker script.
const GLUE_MARK = 'both async and sync fetching of the wasm failed';
const WORKER_MARK = 'worker.js received unknown command';

// Which file of dist/ `bytes` are: a wasm file byte for byte, or one copy of
// a build's glue, minified or not (it names its own .wasm), or of a threaded
// build's worker script (it names its glue). 'several glues' for a file that
// holds more than one; undefined for anything else.
export function distFileOf(bytes, distFiles) {
  const exact = distFiles.get(sha256(bytes));
  if (exact !== undefined) return exact;
  const text = bytes.toString('latin1');
  if (text.split(WORKER_MARK).length === 2) {
    const glues = new Set(text.match(/simd_attention_[a-z_]+(?=\.js)/g));
    if (glues.size === 1) return `${[...glues][0]}.worker.js`;
  }
  const copies = text.split(GLUE_MARK).length - 1;
  if (copies === 0) return undefined;
  const names = new Set(text.match(/simd_attention_[a-z_]+(?=\.wasm)/g));
  return copies === 1 && names.size === 1 ? `${[...names][0]}.js` : 'several glues';
}

// Every file under `dir`: { file (relative), bytes, copyOf (the dist/ file it
// is, or undefined) }.
export function emittedFiles(dir, distFiles) {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const full = path.join(e.parentPath ?? e.path, e.name);
      const bytes = fs.readFileSync(full);
      return { file: path.relative(dir, full), bytes: bytes.length,
        copyOf: distFileOf(bytes, distFiles) };
    })
    .sort((a, b) => a.file.localeCompare(b.file));
}

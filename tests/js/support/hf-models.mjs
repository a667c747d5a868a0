// The Hugging Face reference blocks of ../shared/hf-models (see its
// README), read at run time: cases.json, each case's config.json, its
// model's safetensors and the block's input and output.
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from './golden.mjs';
import { parseSafetensors } from './modules.mjs';

export const modelsDir = process.env.SA_HF_MODELS_DIR ??
  path.resolve(repoRoot, '../shared/hf-models');
export const hfCases = JSON.parse(fs.readFileSync(path.join(modelsDir, 'cases.json'), 'utf8'));
export const modelFile = (name) => path.join(modelsDir, name);
/** NAME_config.json, parsed afresh (a test may edit its copy). */
export const modelConfig = (name) =>
  JSON.parse(fs.readFileSync(modelFile(`${name}_config.json`), 'utf8'));

const parsed = new Map();
const parse = (file) => {
  if (!parsed.has(file)) parsed.set(file, parseSafetensors(fs.readFileSync(modelFile(file))));
  return parsed.get(file);
};
/** NAME.safetensors: the whole model's state_dict, as a SafetensorsFile. */
export const modelTensors = (name) => parse(`${name}.safetensors`);
/** NAME_io.safetensors: the block's x, y (and memory, key_padding_mask). */
export const blockIo = (name) => parse(`${name}_io.safetensors`);

/**
 * The largest difference between `out` and the block's `y` over the rows
 * of real query tokens (all rows without a key_padding_mask).
 */
export function maxRealRowDiff(name, out) {
  const io = blockIo(name);
  const y = io.tensor('y');
  const width = y.shape[y.shape.length - 1];
  const real = io.has('key_padding_mask') ? io.tensor('key_padding_mask').data : undefined;
  if (out.length !== y.data.length) return Infinity;
  let m = 0;
  for (let i = 0; i < y.data.length; i++) {
    if (real === undefined || real[Math.floor(i / width)] === 1) {
      m = Math.max(m, Math.abs(out[i] - y.data[i]));
    }
  }
  return m;
}

/** The forward options of the block's own padding (1 = real token). */
export function paddingOptions(name) {
  const io = blockIo(name);
  return io.has('key_padding_mask')
    ? { keyPaddingMask: Uint8Array.from(io.tensor('key_padding_mask').data) } : {};
}

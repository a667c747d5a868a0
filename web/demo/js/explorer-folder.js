// A Hugging Face model folder from the visitor's disk, read in the page
// (nothing is uploaded): the files a file picker or a drop gives, sorted
// into config.json, the safetensors (one file, or the shards of a larger
// model) and, when there, tokenizer.json and tokenizer_config.json.
import { parseSafetensors } from '../../index.js';

/** Why the files are not a model folder, shown to the visitor as it is. */
export class FolderError extends Error {}

const baseName = (file) => (file.webkitRelativePath || file.name).split('/').pop();

/**
 * The files of a drop: a dropped folder's files (its subfolders left out:
 * a model folder keeps its files at the top), or the dropped files.
 */
export async function droppedFiles(dataTransfer) {
  const entries = [...dataTransfer.items ?? []].filter((i) => i.kind === 'file')
    .map((i) => i.webkitGetAsEntry?.() ?? null);
  if (entries.length === 0 || entries.some((e) => e === null)) return [...dataTransfer.files];
  const files = [];
  for (const entry of entries) {
    if (entry.isFile) files.push(await entryFile(entry));
    else files.push(...await folderFiles(entry));
  }
  return files;
}

const entryFile = (entry) => new Promise((resolve, reject) => entry.file(resolve, reject));

// readEntries gives a folder's entries in batches until an empty one.
async function folderFiles(folder) {
  const reader = folder.createReader();
  const files = [];
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (batch.length === 0) return files;
    for (const entry of batch) if (entry.isFile) files.push(await entryFile(entry));
  }
}

// The tensors of several safetensors files as one file (the shards of one
// model hold distinct tensors).
function mergeShards(shards) {
  if (shards.length === 1) return shards[0].file;
  const owner = new Map();
  for (const { name, file } of shards) {
    for (const tensor of file.names) {
      if (owner.has(tensor)) {
        throw new FolderError(`tensor '${tensor}' is in both ${owner.get(tensor).name} and ${name}`);
      }
      owner.set(tensor, { name, file });
    }
  }
  return {
    names: [...owner.keys()],
    tensor: (tensor) => owner.get(tensor).file.tensor(tensor),
    info: (tensor) => owner.get(tensor).file.info(tensor),
  };
}

async function readJson(file) {
  try {
    return JSON.parse(await file.text());
  } catch (e) {
    throw new FolderError(`${baseName(file)} is not JSON: ${e.message}`);
  }
}

/**
 * The model in `files` (File objects): { config, file (the tensors),
 * tokenizer ({ json, config } or null), names (the files read), bytes }.
 * A FolderError says what is missing or unreadable.
 */
export async function readModelFolder(files) {
  const byName = new Map(files.map((f) => [baseName(f), f]));
  const seen = [...byName.keys()].sort();
  const listed = seen.length ? `it has ${seen.slice(0, 8).join(', ')}${seen.length > 8 ? ', \u2026' : ''}` : 'it is empty';
  if (!byName.has('config.json')) {
    throw new FolderError(`no config.json in the folder (${listed}): the explorer needs the model's config.json ` +
      'and its .safetensors weights');
  }
  const weights = seen.filter((n) => n.endsWith('.safetensors'));
  if (weights.length === 0) {
    throw new FolderError(`no .safetensors file in the folder (${listed}): the explorer reads the weights in ` +
      'safetensors form (model.safetensors, or its shards)');
  }
  const config = await readJson(byName.get('config.json'));
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new FolderError('config.json: expected an object');
  }
  const shards = [];
  let bytes = 0;
  for (const name of weights) {
    const file = byName.get(name);
    bytes += file.size;
    try {
      shards.push({ name, file: parseSafetensors(new Uint8Array(await file.arrayBuffer())) });
    } catch (e) {
      throw new FolderError(`${name}: ${e.message}`);
    }
  }
  const tokenizer = byName.has('tokenizer.json') ? {
    json: await readJson(byName.get('tokenizer.json')),
    config: byName.has('tokenizer_config.json') ? await readJson(byName.get('tokenizer_config.json')) : {},
  } : null;
  return { config, file: mergeShards(shards), tokenizer, names: ['config.json', ...weights,
    ...['tokenizer.json', 'tokenizer_config.json'].filter((n) => tokenizer && byName.has(n))], bytes };
}

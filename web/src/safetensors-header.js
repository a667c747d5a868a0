// The JSON header of a safetensors file, checked on its own, before any of
// the data is read: every tensor's dtype, shape and data_offsets, and that
// the tensors tile the data exactly (the format's rule: the data is the
// tensors' bytes back to back in offset order, with no gap and no overlap,
// so no two names can share bytes). How many data bytes the header
// declares is then known, and a reader reads exactly that many.
import { describe } from './arguments.js';

// Bytes per element of every dtype the format defines. A Map, so that a
// dtype named like an Object.prototype key ('constructor') is no dtype.
export const DTYPE_BYTES = new Map(Object.entries({
  F32: 4, F16: 2, BF16: 2, F64: 8, I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4, U16: 2,
  U8: 1, BOOL: 1, F8_E4M3: 1, F8_E5M2: 1,
}));

// A JSON header larger than this is not a header (real ones are well under
// a megabyte even for thousands of tensors); refusing it early keeps a wrong
// file from being decoded as a huge string, or read as one from a stream.
export const MAX_HEADER_BYTES = 100 * 1024 * 1024;

const shapeString = (shape) => `[${shape.join(', ')}]`;
const offsetsString = ({ begin, end }) => `[${begin}, ${end}]`;

/**
 * The header's length from the file's first 8 bytes: refused when more than
 * `following` bytes (when known) come after them, or past MAX_HEADER_BYTES.
 */
export function headerLength(where, first8, following) {
  const length = new DataView(first8.buffer, first8.byteOffset, 8).getBigUint64(0, true);
  if (following !== undefined && length > BigInt(following)) {
    throw new RangeError(`${where}: header: its first 8 bytes give a length of ${length} ` +
      `bytes, but ${following} follow: the file is truncated or not safetensors`);
  }
  if (length > BigInt(MAX_HEADER_BYTES)) {
    throw new RangeError(`${where}: header: its first 8 bytes give a length of ${length} ` +
      `bytes, more than a header takes (${MAX_HEADER_BYTES}): not a safetensors file`);
  }
  return Number(length);
}

// JSON.parse keeps the last of two equal keys without a word, so a header
// that names a tensor twice (or one tensor's data_offsets twice) would be
// read as whichever came last; other readers may take the first. Finds the
// first repeated key of any object in `text`, which JSON.parse accepted,
// as { key, path } (the keys of the objects around it).
function repeatedKey(text) {
  const objects = []; // per open object its keys, per open array null
  const path = []; // per open object or array the key of its parent it is under
  let last; // the last key read in the innermost object
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (expectKey) {
        const raw = text.slice(i + 1, j);
        const key = raw.includes('\\') ? JSON.parse(text.slice(i, j + 1)) : raw;
        const keys = objects[objects.length - 1];
        if (keys.has(key)) return { key, path: path.slice(1) };
        keys.add(key);
        last = key;
        expectKey = false;
      }
      i = j;
    } else if (c === '{' || c === '[') {
      path.push(last);
      objects.push(c === '{' ? new Set() : null);
      expectKey = c === '{';
    } else if (c === '}' || c === ']') {
      objects.pop();
      last = path.pop();
    } else if (c === ',') {
      expectKey = objects[objects.length - 1] !== null;
    }
  }
  return undefined;
}

// One tensor's entry, checked against itself (the data is not read yet).
function readEntry(where, name, entry) {
  const at = `${where}: tensor '${name}'`;
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
    throw new TypeError(`${at}: expected { dtype, shape, data_offsets }, got ${describe(entry)}`);
  }
  const { dtype, shape, data_offsets: offsets } = entry;
  const bytesPerElement = typeof dtype === 'string' ? DTYPE_BYTES.get(dtype) : undefined;
  if (bytesPerElement === undefined) {
    throw new TypeError(`${at}: dtype: expected one of ${[...DTYPE_BYTES.keys()].join(', ')}, ` +
      `got ${describe(dtype)}`);
  }
  const isCount = (v) => Number.isSafeInteger(v) && v >= 0;
  if (!Array.isArray(shape) || !shape.every(isCount)) {
    throw new TypeError(`${at}: shape: expected an array of non-negative integers, got ` +
      `${describe(shape)}`);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount) ||
      offsets[0] > offsets[1]) {
    throw new TypeError(`${at}: data_offsets: expected [begin, end] with 0 <= begin <= end, ` +
      `got ${describe(offsets)}`);
  }
  const [begin, end] = offsets;
  const needed = shape.reduce((n, d) => n * d, 1) * bytesPerElement;
  if (end - begin !== needed) {
    throw new RangeError(`${at}: shape ${shapeString(shape)} of ${dtype} takes ${needed} bytes, ` +
      `but data_offsets [${begin}, ${end}] hold ${end - begin}`);
  }
  return { name, dtype, shape: [...shape], begin, end };
}

// The entries in offset order must tile [0, end of the last) exactly.
// Returns the number of data bytes they take. An overlap is reported
// before a gap: two names on the same bytes also leave others to none.
function checkTiling(where, entries) {
  const ordered = [...entries.values()].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let gap;
  let end = 0;
  for (const [i, e] of ordered.entries()) {
    const previous = ordered[i - 1];
    if (e.begin < end) {
      throw new RangeError(`${where}: tensor '${e.name}': data_offsets ${offsetsString(e)} ` +
        `overlap those of tensor '${previous.name}' (${offsetsString(previous)}): each ` +
        "tensor's bytes must be its own");
    }
    if (e.begin > end && gap === undefined) {
      gap = new RangeError(`${where}: tensor '${e.name}': data_offsets ${offsetsString(e)} ` +
        `leave the data's bytes [${end}, ${e.begin}) to no tensor (` +
        `${previous === undefined ? 'it is the first' : `after '${previous.name}'`}): the ` +
        'tensors must follow each other with no gap');
    }
    end = e.end;
  }
  if (gap !== undefined) throw gap;
  return end;
}

/**
 * The header's bytes (UTF-8 JSON) -> { entries (name -> { dtype, shape,
 * begin, end }, in the header's order), metadata, dataBytes (how many bytes
 * of data its tensors take) }, every rule of the format checked.
 */
export function readHeader(where, headerBytes) {
  let header;
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(headerBytes);
    header = JSON.parse(text);
  } catch (e) {
    throw new TypeError(`${where}: header: not UTF-8 JSON (${e.message}): not a safetensors ` +
      'file', { cause: e });
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) {
    throw new TypeError(`${where}: header: expected a JSON object, got ${describe(header)}`);
  }
  const repeated = repeatedKey(text);
  if (repeated !== undefined) {
    const { key, path } = repeated;
    const what = path.length > 0 ? `${path.map((k) => `'${k}'`).join(' > ')}: key '${key}'`
      : key === '__metadata__' ? key : `tensor '${key}'`;
    throw new TypeError(`${where}: header: ${what} appears twice: not a safetensors file`);
  }
  const { __metadata__: metadata = {}, ...tensors } = header;
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata) ||
      !Object.values(metadata).every((v) => typeof v === 'string')) {
    throw new TypeError(`${where}: header: __metadata__: expected an object of strings, got ` +
      `${describe(metadata)}`);
  }
  const entries = new Map(Object.entries(tensors).map(([name, entry]) =>
    [name, readEntry(where, name, entry)]));
  return { entries, metadata: { ...metadata }, dataBytes: checkTiling(where, entries) };
}

/**
 * Throws unless `available` (a count, or undefined for "more than
 * declared") bytes of data is what the header declares.
 */
export function checkDataLength(where, { entries, dataBytes }, available) {
  if (available !== undefined && available < dataBytes) {
    const cut = [...entries.values()].find((e) => e.end > available);
    throw new RangeError(`${where}: tensor '${cut.name}': data_offsets ${offsetsString(cut)} ` +
      `end past the ${available} bytes of data after the header: the file is truncated`);
  }
  if (available === undefined || available > dataBytes) {
    throw new RangeError(`${where}: data: the header's tensors take ${dataBytes} bytes, but ` +
      `${available ?? 'more'} follow the header: the file is longer than its header declares`);
  }
}

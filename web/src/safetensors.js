// Reads safetensors files, the format Hugging Face models ship in: 8 bytes
// of little-endian header length N, N bytes of JSON { name: { dtype, shape,
// data_offsets: [begin, end] }, __metadata__?: { key: string } }, then the
// raw little-endian tensors, offsets counted from the end of the header.
// Tensors are converted to float32 when asked for, one at a time, so a large
// file costs only the tensors a caller reads; F16 and BF16 tensors may stay
// 16-bit instead (keep16Bit), for objects that hold their weights so.
import { checkObject, describe, optionalBoolean } from './arguments.js';
import { OPTION_KEYS } from './option-keys.js';

// Bytes per element of every dtype the format defines. Any of them parses;
// only the first three convert to float32 (the others are not weights this
// package takes: position ids, masks, quantized blocks).
const DTYPE_BYTES = {
  F32: 4, F16: 2, BF16: 2, F64: 8, I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4, U16: 2,
  U8: 1, BOOL: 1, F8_E4M3: 1, F8_E5M2: 1,
};
const CONVERTED = ['F32', 'F16', 'BF16'];

// A JSON header larger than this is not a header (real ones are well under
// a megabyte even for thousands of tensors); refusing it early keeps a wrong
// file from being decoded as a huge string.
const MAX_HEADER_BYTES = 100 * 1024 * 1024;

const isNode = typeof process === 'object' && process.versions?.node !== undefined;

function shapeString(shape) {
  return `[${shape.join(', ')}]`;
}

// IEEE half -> float32 bits, exactly (every half is a float32).
function halfToFloatBits(h) {
  const sign = (h & 0x8000) << 16;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0x1f) return sign | 0x7f800000 | (fraction << 13); // inf, NaN
  if (exponent !== 0) return sign | ((exponent + 112) << 23) | (fraction << 13);
  if (fraction === 0) return sign; // +-0
  // Subnormal half: normalise the fraction into a float32 exponent.
  let e = 113;
  let f = fraction;
  while ((f & 0x400) === 0) { f <<= 1; e--; }
  return sign | (e << 23) | ((f & 0x3ff) << 13);
}

// One tensor's bytes (`bytes`, a fresh copy) as float32 values.
function toFloat32(dtype, bytes) {
  return dtype === 'F32' ? new Float32Array(bytes.buffer)
    : widen16Bit(dtype, new Uint16Array(bytes.buffer));
}

/** F16 or BF16 bits (`dtype`) as float32 values, exactly. */
export function widen16Bit(dtype, halves) {
  const out = new Float32Array(halves.length);
  const bits = new Uint32Array(out.buffer);
  if (dtype === 'BF16') {
    // bfloat16 is the top half of a float32.
    for (let i = 0; i < halves.length; i++) bits[i] = halves[i] << 16;
  } else {
    for (let i = 0; i < halves.length; i++) bits[i] = halfToFloatBits(halves[i]);
  }
  return out;
}

// Checks one header entry against the data that follows the header.
function readEntry(where, name, entry, dataBytes) {
  const at = `${where}: tensor '${name}'`;
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
    throw new TypeError(`${at}: expected { dtype, shape, data_offsets }, got ${describe(entry)}`);
  }
  const { dtype, shape, data_offsets: offsets } = entry;
  if (typeof dtype !== 'string' || !(dtype in DTYPE_BYTES)) {
    throw new TypeError(`${at}: dtype: expected one of ${Object.keys(DTYPE_BYTES).join(', ')}, ` +
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
  const needed = shape.reduce((n, d) => n * d, 1) * DTYPE_BYTES[dtype];
  if (end - begin !== needed) {
    throw new RangeError(`${at}: shape ${shapeString(shape)} of ${dtype} takes ${needed} bytes, ` +
      `but data_offsets [${begin}, ${end}] hold ${end - begin}`);
  }
  if (end > dataBytes) {
    throw new RangeError(`${at}: data_offsets [${begin}, ${end}] end past the ${dataBytes} ` +
      'bytes of data after the header: the file is truncated');
  }
  return { dtype, shape: [...shape], begin, end };
}

/**
 * A parsed safetensors file: its header, and its tensors as float32 on
 * request (F16 and BF16 as their bits when read with keep16Bit).
 */
export class SafetensorsFile {
  #bytes;
  #data;
  #entries;

  constructor(bytes, dataStart, entries, metadata, keep16Bit) {
    this.#bytes = bytes;
    this.#data = dataStart;
    this.#entries = entries;
    /** Whether tensor() returns F16 and BF16 tensors as their bits (a Uint16Array). */
    this.keep16Bit = keep16Bit;
    /** The header's `__metadata__` (string to string), {} when absent. */
    this.metadata = metadata;
    /** The tensors' names, in the header's order. */
    this.names = [...entries.keys()];
  }

  has(name) {
    return this.#entries.has(name);
  }

  /** `{ dtype, shape }` of one tensor, without reading it. */
  info(name) {
    const { dtype, shape } = this.#entry('SafetensorsFile.info', name);
    return { dtype, shape: [...shape] };
  }

  /**
   * One tensor as `{ data, shape, dtype }` (a fresh copy): data a
   * Float32Array, or with keep16Bit a Uint16Array of an F16 or BF16 tensor's bits.
   */
  tensor(name) {
    const where = 'SafetensorsFile.tensor';
    const { dtype, shape, begin, end } = this.#entry(where, name);
    if (!CONVERTED.includes(dtype)) {
      throw new TypeError(`${where}: tensor '${name}': dtype ${dtype} is not converted to ` +
        `float32 (expected ${CONVERTED.join(', ')})`);
    }
    // slice() copies into a buffer of its own, aligned for the typed arrays.
    const bytes = this.#bytes.slice(this.#data + begin, this.#data + end);
    const data = this.keep16Bit && dtype !== 'F32' ? new Uint16Array(bytes.buffer)
      : toFloat32(dtype, bytes);
    return { data, shape: [...shape], dtype };
  }

  #entry(where, name) {
    const entry = typeof name === 'string' ? this.#entries.get(name) : undefined;
    if (entry === undefined) {
      const some = this.names.slice(0, 3).map((n) => `'${n}'`).join(', ');
      throw new RangeError(`${where}: tensor ${describe(name)} is not in the file ` +
        `(${this.names.length} tensors${some === '' ? '' : `, e.g. ${some}`})`);
    }
    return entry;
  }
}

// { keep16Bit? }, checked.
function readOptions(where, options) {
  const o = options === undefined ? {} : options;
  checkObject(where, 'options', o, OPTION_KEYS.SafetensorsOptions);
  return optionalBoolean(where, 'options.keep16Bit', o.keep16Bit, false);
}

function parse(where, bytes, keep16Bit) {
  const view = bytes instanceof ArrayBuffer || Object.prototype.toString.call(bytes) ===
    '[object ArrayBuffer]' ? new Uint8Array(bytes)
    : ArrayBuffer.isView(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      : undefined;
  if (view === undefined) {
    throw new TypeError(`${where}: bytes: expected an ArrayBuffer or Uint8Array, got ` +
      `${describe(bytes)}`);
  }
  if (view.length < 8) {
    throw new RangeError(`${where}: expected at least 8 bytes (the header's length), got ` +
      `${view.length}: not a safetensors file`);
  }
  const length = new DataView(view.buffer, view.byteOffset, 8).getBigUint64(0, true);
  if (length > BigInt(Math.min(view.length - 8, MAX_HEADER_BYTES))) {
    throw new RangeError(`${where}: header: its first 8 bytes give a length of ${length} ` +
      `bytes, but ${view.length - 8} follow: the file is truncated or not safetensors`);
  }
  const headerEnd = 8 + Number(length);
  let header;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true })
      .decode(view.subarray(8, headerEnd)));
  } catch (e) {
    throw new TypeError(`${where}: header: not UTF-8 JSON (${e.message}): not a safetensors ` +
      'file', { cause: e });
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) {
    throw new TypeError(`${where}: header: expected a JSON object, got ${describe(header)}`);
  }
  const { __metadata__: metadata = {}, ...tensors } = header;
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata) ||
      !Object.values(metadata).every((v) => typeof v === 'string')) {
    throw new TypeError(`${where}: header: __metadata__: expected an object of strings, got ` +
      `${describe(metadata)}`);
  }
  const dataBytes = view.length - headerEnd;
  const entries = new Map(Object.entries(tensors).map(([name, entry]) =>
    [name, readEntry(where, name, entry, dataBytes)]));
  return new SafetensorsFile(view, headerEnd, entries, { ...metadata }, keep16Bit);
}

/**
 * Parses safetensors bytes (an ArrayBuffer or a view of one). The file
 * keeps a reference to them and copies a tensor out when it is read.
 */
export function parseSafetensors(bytes, options) {
  const where = 'parseSafetensors';
  return parse(where, bytes, readOptions(where, options));
}

// A file path or file: URL, read in Node. The specifier is hidden from
// bundlers, so a browser bundle holds no Node import.
async function readFile(where, path) {
  if (!isNode) {
    throw new TypeError(`${where}: source: a path is read only in Node, got ` +
      `${describe(String(path))}; in a browser pass await fetch(url) (a Response)`);
  }
  const fsName = 'node:fs/promises';
  const fs = await import(/* webpackIgnore: true */ /* @vite-ignore */ fsName);
  try {
    return await fs.readFile(path);
  } catch (e) {
    throw new Error(`${where}: cannot read ${path} (${e.code ?? e.message})`, { cause: e });
  }
}

const isResponse = (v) => v !== null && typeof v === 'object' &&
  typeof v.arrayBuffer === 'function' && typeof v.headers === 'object';
const isUrl = (v) => v !== null && typeof v === 'object' && typeof v.href === 'string';

/**
 * Reads a safetensors file from bytes, a fetch Response, or (in Node) a file
 * path or file: URL.
 */
export async function readSafetensors(source, options) {
  const where = 'readSafetensors';
  const keep16Bit = readOptions(where, options);
  if (typeof source === 'string' || isUrl(source)) {
    return parse(where, await readFile(where, source), keep16Bit);
  }
  if (isResponse(source)) {
    if (!source.ok) {
      throw new Error(`${where}: fetching ${source.url || 'the file'} failed: HTTP ` +
        `${source.status}`);
    }
    return parse(where, await source.arrayBuffer(), keep16Bit);
  }
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
    return parse(where, source, keep16Bit);
  }
  throw new TypeError(`${where}: source: expected an ArrayBuffer, a Uint8Array, a Response, ` +
    `or a file path or URL (Node), got ${describe(source)}`);
}

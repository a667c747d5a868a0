// Reads safetensors files, the format Hugging Face models ship in: 8 bytes
// of little-endian header length N, N bytes of JSON { name: { dtype, shape,
// data_offsets: [begin, end] }, __metadata__?: { key: string } }, then the
// raw little-endian tensors, offsets counted from the end of the header.
// Tensors are converted to float32 when asked for, one at a time, so a large
// file costs only the tensors a caller reads; F16 and BF16 tensors may stay
// 16-bit instead (keep16Bit), for objects that hold their weights so.
import { describe, optionalBoolean, optionsObject } from './arguments.js';
import { float16ToFloat32Bits } from './float16-bits.js';
import { OPTION_KEYS } from './option-keys.js';
import { checkDataLength, headerLength, readHeader } from './safetensors-header.js';

const CONVERTED = ['F32', 'F16', 'BF16'];

const isNode = typeof process === 'object' && process.versions?.node !== undefined;

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
    for (let i = 0; i < halves.length; i++) bits[i] = float16ToFloat32Bits(halves[i]);
  }
  return out;
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
  const o = optionsObject(where, options, OPTION_KEYS.SafetensorsOptions);
  return optionalBoolean(where, 'options.keep16Bit', o.keep16Bit, false);
}

// bytes: an ArrayBuffer or a view of one, else a TypeError.
function bytesView(where, bytes) {
  if (bytes instanceof ArrayBuffer ||
      Object.prototype.toString.call(bytes) === '[object ArrayBuffer]') {
    return new Uint8Array(bytes);
  }
  if (ArrayBuffer.isView(bytes)) {
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  throw new TypeError(`${where}: bytes: expected an ArrayBuffer or Uint8Array, got ` +
    `${describe(bytes)}`);
}

function tooShort(where, length) {
  return new RangeError(`${where}: expected at least 8 bytes (the header's length), got ` +
    `${length}: not a safetensors file`);
}

function parse(where, bytes, keep16Bit) {
  const view = bytesView(where, bytes);
  if (view.length < 8) throw tooShort(where, view.length);
  const headerEnd = 8 + headerLength(where, view, view.length - 8);
  const header = readHeader(where, view.subarray(8, headerEnd));
  checkDataLength(where, header, view.length - headerEnd);
  return new SafetensorsFile(view, headerEnd, header.entries, header.metadata, keep16Bit);
}

/**
 * Parses safetensors bytes (an ArrayBuffer or a view of one). The file
 * keeps a reference to them and copies a tensor out when it is read.
 */
export function parseSafetensors(bytes, options) {
  const where = 'parseSafetensors';
  return parse(where, bytes, readOptions(where, options));
}

// Reads a file from `source` ({ read(into, at, length) -> count read, 0 at
// the end; size: its length when known }) no further than its header
// declares: the 8-byte length, that many bytes of header, the data its
// tensors take, then one byte more to find that nothing follows. An endless
// or oversized source is an error, never a buffer that grows with it.
async function readBounded(where, source, keep16Bit) {
  const fill = async (into, at, length) => {
    let got = 0;
    while (got < length) {
      const n = await source.read(into, at + got, length - got);
      if (n === 0) break;
      got += n;
    }
    return got;
  };
  const first8 = new Uint8Array(8);
  const got8 = await fill(first8, 0, 8);
  if (got8 < 8) throw tooShort(where, got8);
  const length = headerLength(where, first8, source.size === undefined ? undefined
    : source.size - 8);
  const headerBytes = new Uint8Array(length);
  const gotHeader = await fill(headerBytes, 0, length);
  // Fewer came than the header's length: the message of a short file.
  if (gotHeader < length) headerLength(where, first8, gotHeader);
  const header = readHeader(where, headerBytes);
  const headerEnd = 8 + length;
  // A file's size is known: a wrong one is refused before the data is read.
  if (source.size !== undefined) checkDataLength(where, header, source.size - headerEnd);
  let bytes;
  try {
    bytes = new Uint8Array(headerEnd + header.dataBytes);
  } catch (e) {
    throw new RangeError(`${where}: the header declares ${header.dataBytes} bytes of data, ` +
      `more than this engine holds in one buffer (${e.message})`, { cause: e });
  }
  bytes.set(first8);
  bytes.set(headerBytes, 8);
  const gotData = await fill(bytes, headerEnd, header.dataBytes);
  const more = gotData === header.dataBytes && await fill(new Uint8Array(1), 0, 1) > 0;
  checkDataLength(where, header, more ? undefined : gotData);
  return new SafetensorsFile(bytes, headerEnd, header.entries, header.metadata, keep16Bit);
}

// The largest read asked of the file system at once (Node refuses reads of
// 2 GiB and more).
const MAX_READ = 1 << 30;

// A file path or file: URL, read in Node. The specifier is hidden from
// bundlers, so a browser bundle holds no Node import.
async function readFile(where, path, keep16Bit) {
  if (!isNode) {
    throw new TypeError(`${where}: source: a path is read only in Node, got ` +
      `${describe(String(path))}; in a browser pass await fetch(url) (a Response)`);
  }
  const fsName = 'node:fs/promises';
  const fs = await import(/* webpackIgnore: true */ /* @vite-ignore */ fsName);
  const cannotRead = (e) => new Error(`${where}: cannot read ${path} (${e.code ?? e.message})`,
    { cause: e });
  let file;
  let size;
  try {
    file = await fs.open(path, 'r');
    const stat = await file.stat();
    // Devices and pipes report no size of their own: they are read as streams.
    size = stat.isFile() ? stat.size : undefined;
  } catch (e) {
    await file?.close();
    throw cannotRead(e);
  }
  const read = async (into, at, length) => {
    try {
      return (await file.read(into, at, Math.min(length, MAX_READ), null)).bytesRead;
    } catch (e) {
      throw cannotRead(e);
    }
  };
  try {
    return await readBounded(where, { read, size }, keep16Bit);
  } finally {
    await file.close();
  }
}

// A Response's body stream, read chunk by chunk into the caller's buffers.
async function readResponseBody(where, body, keep16Bit) {
  const reader = body.getReader();
  let chunk = new Uint8Array(0);
  const read = async (into, at, length) => {
    while (chunk.length === 0) {
      const { done, value } = await reader.read();
      if (done) return 0;
      // By tag: a chunk made in another realm passes.
      if (Object.prototype.toString.call(value) !== '[object Uint8Array]') {
        throw new TypeError(`${where}: source: the Response's body gave ${describe(value)}, ` +
          'expected Uint8Array chunks');
      }
      chunk = value;
    }
    const n = Math.min(length, chunk.length);
    into.set(chunk.subarray(0, n), at);
    chunk = chunk.subarray(n);
    return n;
  };
  try {
    return await readBounded(where, { read }, keep16Bit);
  } finally {
    // Stops the source, whatever is left of it (an endless stream included).
    await reader.cancel().catch(() => {});
  }
}

const isResponse = (v) => v !== null && typeof v === 'object' &&
  typeof v.arrayBuffer === 'function' && typeof v.headers === 'object';
const isUrl = (v) => v !== null && typeof v === 'object' && typeof v.href === 'string';

/**
 * Reads a safetensors file from bytes, a fetch Response, or (in Node) a file
 * path or file: URL; a file or a Response's body no further than its header
 * declares.
 */
export async function readSafetensors(source, options) {
  const where = 'readSafetensors';
  const keep16Bit = readOptions(where, options);
  if (typeof source === 'string' || isUrl(source)) return readFile(where, source, keep16Bit);
  if (isResponse(source)) {
    if (!source.ok) {
      throw new Error(`${where}: fetching ${source.url || 'the file'} failed: HTTP ` +
        `${source.status}`);
    }
    return typeof source.body?.getReader === 'function'
      ? readResponseBody(where, source.body, keep16Bit)
      : parse(where, await source.arrayBuffer(), keep16Bit);
  }
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
    return parse(where, source, keep16Bit);
  }
  throw new TypeError(`${where}: source: expected an ArrayBuffer, a Uint8Array, a Response, ` +
    `or a file path or URL (Node), got ${describe(source)}`);
}

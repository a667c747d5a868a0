// The safetensors format's rules on crafted files: the data is the tensors'
// bytes back to back (no overlap, no alias, no gap, nothing after), every
// name and field once, dtypes only the format's own; and reads of files and
// streams bounded by what the header declares (/dev/zero, an endless
// stream, a file longer than declared).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expectError, rejection } from './support/errors.mjs';
import { parseSafetensors, readSafetensors } from './support/modules.mjs';
import { writeSafetensors } from './support/safetensors-writer.mjs';

// Two F32 tensors, 'query.weight' [2, 2] then 'key.weight' [2, 2], back to
// back; `edit` changes the header before it is written.
const pair = (edit) => writeSafetensors({
  'query.weight': { data: Float32Array.of(1, 2, 3, 4), shape: [2, 2] },
  'key.weight': { data: Float32Array.of(5, 6, 7, 8), shape: [2, 2] },
}, { header: edit });

// A file of header text `json` (written as is, so keys may repeat) and
// `dataBytes` zero bytes of data.
function withHeaderText(json, dataBytes) {
  const text = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + text.length + dataBytes);
  new DataView(out.buffer).setBigUint64(0, BigInt(text.length), true);
  out.set(text, 8);
  return out;
}
const F32_4 = '{"dtype":"F32","shape":[4],"data_offsets":[0,16]}';

describe('parseSafetensors: the data is the tensors back to back', () => {
  test('a tensor aliasing another\'s bytes is refused, naming both', () => {
    expectError(() => parseSafetensors(pair((h) => { h['query.weight'].data_offsets = [16, 32]; })),
      RangeError, "parseSafetensors: tensor 'key.weight': data_offsets [16, 32] overlap those " +
      "of tensor 'query.weight' ([16, 32]): each tensor's bytes must be its own");
  });

  test('overlapping offsets are refused', () => {
    const three = writeSafetensors({
      a: { data: Float32Array.of(1, 2), shape: [2] },
      b: { data: Float32Array.of(3, 4), shape: [2] },
      c: { data: Float32Array.of(5, 6), shape: [2] },
    }, { header: (h) => { h.b.data_offsets = [4, 12]; } });
    expectError(() => parseSafetensors(three), RangeError, "parseSafetensors: tensor 'b': " +
      "data_offsets [4, 12] overlap those of tensor 'a' ([0, 8]): each tensor's bytes must be " +
      'its own');
  });

  test('a gap before the first tensor or between two is refused', () => {
    const shifted = (h) => {
      h['query.weight'].data_offsets = [4, 20];
      h['key.weight'].data_offsets = [20, 36];
    };
    const bytes = pair(shifted);
    // The same 32 bytes of data: only the offsets leave 4 of them to no tensor.
    expectError(() => parseSafetensors(bytes), RangeError, "parseSafetensors: tensor " +
      "'query.weight': data_offsets [4, 20] leave the data's bytes [0, 4) to no tensor (it is " +
      'the first): the tensors must follow each other with no gap');
    const gap = writeSafetensors({
      a: { data: Float32Array.of(1), shape: [1] },
      pad: { data: Float32Array.of(0), shape: [1] },
      b: { data: Float32Array.of(2), shape: [1] },
    }, { header: (h) => { delete h.pad; } });
    expectError(() => parseSafetensors(gap), RangeError, "parseSafetensors: tensor 'b': " +
      "data_offsets [8, 12] leave the data's bytes [4, 8) to no tensor (after 'a'): the " +
      'tensors must follow each other with no gap');
  });

  test('bytes after the last tensor are refused; empty tensors share an offset', () => {
    const bytes = pair();
    const longer = new Uint8Array(bytes.length + 3);
    longer.set(bytes);
    expectError(() => parseSafetensors(longer), RangeError, "parseSafetensors: data: the " +
      "header's tensors take 32 bytes, but 35 follow the header: the file is longer than its " +
      'header declares');
    const empties = parseSafetensors(writeSafetensors({
      none: { data: new Float32Array(0), shape: [0, 3] },
      one: { data: Float32Array.of(7), shape: [1] },
      also: { data: new Float32Array(0), shape: [0] },
    }));
    expect(empties.tensor('one').data).toEqual(Float32Array.of(7));
    expect(empties.tensor('also').data).toEqual(new Float32Array(0));
  });

  test('the tensors may come in any order in the header', () => {
    const st = parseSafetensors(pair((h) => {
      const q = h['query.weight'];
      delete h['query.weight'];
      h['query.weight'] = q;
    }));
    expect(st.names).toEqual(['key.weight', 'query.weight']);
    expect(st.tensor('query.weight').data).toEqual(Float32Array.of(1, 2, 3, 4));
  });
});

describe('parseSafetensors: every key once', () => {
  test('a tensor named twice, also through a JSON escape', () => {
    expectError(() => parseSafetensors(withHeaderText(`{"a":${F32_4},"a":${F32_4}}`, 16)),
      TypeError, "parseSafetensors: header: tensor 'a' appears twice: not a safetensors file");
    expectError(() => parseSafetensors(withHeaderText(`{"key.weight":${F32_4},` +
      `"\\u006bey.weight":${F32_4}}`, 16)), TypeError, 'parseSafetensors: header: tensor ' +
      "'key.weight' appears twice: not a safetensors file");
  });

  test('a field of a tensor, __metadata__ or one of its keys twice', () => {
    expectError(() => parseSafetensors(withHeaderText(
      '{"w":{"dtype":"F32","shape":[4],"data_offsets":[16,32],"data_offsets":[0,16]}}', 16)),
    TypeError, "parseSafetensors: header: 'w': key 'data_offsets' appears twice: not a " +
      'safetensors file');
    expectError(() => parseSafetensors(withHeaderText(
      `{"__metadata__":{"format":"pt","format":"np"},"w":${F32_4}}`, 16)), TypeError,
    "parseSafetensors: header: '__metadata__': key 'format' appears twice: not a safetensors " +
      'file');
    expectError(() => parseSafetensors(withHeaderText(
      `{"__metadata__":{},"w":${F32_4},"__metadata__":{}}`, 16)), TypeError,
    'parseSafetensors: header: __metadata__ appears twice: not a safetensors file');
  });

  test('equal keys in different objects, and brackets inside strings, are no repeat', () => {
    const st = parseSafetensors(withHeaderText('{"__metadata__":{"a":"{[\\"a\\"]}"},' +
      `"a":${F32_4}}`, 16));
    expect(st.metadata).toEqual({ a: '{["a"]}' });
    expect(st.names).toEqual(['a']);
  });
});

describe('dtype and tensor names that are Object.prototype keys', () => {
  test.each(['constructor', '__proto__', 'toString', 'hasOwnProperty'])('dtype %j is refused', (dtype) => {
    expectError(() => parseSafetensors(pair((h) => { h['key.weight'].dtype = dtype; })),
      TypeError, "parseSafetensors: tensor 'key.weight': dtype: expected one of F32, F16, " +
      'BF16, F64, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2, got ' +
      `${JSON.stringify(dtype)}`);
  });

  test('a tensor named __proto__ or constructor is a tensor like any other', () => {
    const st = parseSafetensors(withHeaderText(`{"__proto__":${F32_4},"constructor":` +
      '{"dtype":"F32","shape":[1],"data_offsets":[16,20]}}', 20));
    expect(st.names).toEqual(['__proto__', 'constructor']);
    expect(st.info('constructor')).toEqual({ dtype: 'F32', shape: [1] });
    expect(st.has('toString')).toBe(false);
  });
});

describe('readSafetensors reads no further than the header declares', () => {
  test('/dev/zero: a header of length 0, refused after 8 bytes', async () => {
    const error = await rejection(readSafetensors('/dev/zero'));
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toMatch(/^readSafetensors: header: not UTF-8 JSON \(.*\): not a safetensors file$/);
  });

  // A Response over an endless stream, to its reader: `first` and then
  // 64 KiB of zeros, up to 64 MiB (so that a reader that reads it all fails
  // the test instead of hanging it); counts the chunks pulled (the stream
  // pulls one or two ahead of its reader) and whether the reader stopped it.
  function endless(first) {
    const seen = { pulls: 0, cancelled: false };
    const body = new ReadableStream({
      pull(controller) {
        seen.pulls += 1;
        if (seen.pulls > 1024) controller.close();
        else controller.enqueue(seen.pulls === 1 && first ? first : new Uint8Array(1 << 16));
      },
      cancel() { seen.cancelled = true; },
    });
    return { response: new Response(body), seen };
  }

  test('an endless stream of zeros is refused at once, and cancelled', async () => {
    const { response, seen } = endless();
    const error = await rejection(readSafetensors(response));
    expect(error.message).toMatch(/^readSafetensors: header: not UTF-8 JSON/);
    expect(seen.cancelled).toBe(true);
    expect(seen.pulls).toBeLessThanOrEqual(3);
  });

  test('an endless stream after a valid file is refused after one byte more', async () => {
    const { response, seen } = endless(pair());
    const error = await rejection(readSafetensors(response));
    expect(error).toBeInstanceOf(RangeError);
    expect(error.message).toBe("readSafetensors: data: the header's tensors take 32 bytes, " +
      'but more follow the header: the file is longer than its header declares');
    expect(seen.cancelled).toBe(true);
    expect(seen.pulls).toBeLessThanOrEqual(4);
  });

  test('a header length beyond any header is refused before reading it', async () => {
    const huge = new Uint8Array(8);
    new DataView(huge.buffer).setBigUint64(0, 2n ** 40n, true);
    const { response, seen } = endless(huge);
    const error = await rejection(readSafetensors(response));
    expect(error.message).toBe('readSafetensors: header: its first 8 bytes give a length of ' +
      '1099511627776 bytes, more than a header takes (104857600): not a safetensors file');
    expect(seen.cancelled).toBe(true);
    expect(seen.pulls).toBeLessThanOrEqual(3);
  });

  test('a stream that ends early names the truncated tensor', async () => {
    const bytes = pair();
    const error = await rejection(readSafetensors(new Response(bytes.subarray(0, bytes.length - 5))));
    expect(error.message).toBe("readSafetensors: tensor 'key.weight': data_offsets [16, 32] " +
      'end past the 27 bytes of data after the header: the file is truncated');
  });

  test('a file longer or shorter than declared is refused before its data is read', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sa-safetensors-'));
    try {
      const bytes = pair();
      const file = path.join(dir, 'longer.safetensors');
      fs.writeFileSync(file, Buffer.concat([bytes, Buffer.alloc(1000)]));
      expect((await rejection(readSafetensors(file))).message).toBe('readSafetensors: data: ' +
        "the header's tensors take 32 bytes, but 1032 follow the header: the file is longer " +
        'than its header declares');
      fs.writeFileSync(file, bytes.subarray(0, 20));
      expect((await rejection(readSafetensors(file))).message).toMatch(
        /^readSafetensors: header: its first 8 bytes give a length of \d+ bytes, but 12 follow: the file is truncated or not safetensors$/);
      fs.writeFileSync(file, bytes);
      expect((await readSafetensors(file)).tensor('key.weight').data).toEqual(Float32Array.of(5, 6, 7, 8));
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  test('a body of chunks that are not bytes is refused', async () => {
    const body = new ReadableStream({ start(c) { c.enqueue('not bytes'); c.close(); } });
    const error = await rejection(readSafetensors(new Response(body)));
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe('readSafetensors: source: the Response\'s body gave "not bytes", ' +
      'expected Uint8Array chunks');
  });
});

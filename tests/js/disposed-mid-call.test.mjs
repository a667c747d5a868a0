// An object disposed while its call reads its arguments (a getter of a
// tensor or an option calls dispose(), of the object, of the cache or memory
// it is given, or of the whole module): the call throws an Error saying so,
// not Embind's BindingError, and the module's other objects go on.
import { expectError } from './support/errors.mjs';
import { randomFloats, randomLayerWeights } from './support/layers.mjs';
import { createAttentionModule, track } from './support/modules.mjs';

const module = await createAttentionModule({ simd: true, relaxedSimd: false, threads: 1 });
const [B, T, d, f] = [2, 3, 8, 6];
const x = { data: randomFloats(B * T * d, 1), shape: [B, T, d] };
const step = { data: randomFloats(B * d, 2), shape: [B, 1, d] };
const mhaConfig = { dModel: d, numHeads: 2 };
const layerConfig = { dModel: d, numHeads: 2, ffnDim: f };

// `t` whose data getter first runs `effect`.
const withGetter = (t, effect) => ({ get data() { effect(); return t.data; }, shape: t.shape });

function attention() {
  const mha = track(new module.MultiHeadAttention(mhaConfig));
  mha.setWeights(randomLayerWeights(d, f, 3).attention);
  return mha;
}

const during = (where, what) => `${where}: ${what} was disposed during the call (by a getter ` +
  'of one of its arguments); create a new one';

test('the object itself, from a tensor\'s or an option\'s getter', () => {
  const cases = [
    [(m) => m.forward(withGetter(x, () => m.dispose())), 'MultiHeadAttention.forward'],
    [(m) => m.forward(x, undefined, undefined, { get causal() { m.dispose(); return true; } }),
      'MultiHeadAttention.forward'],
    [(m) => m.setWeights({ ...randomLayerWeights(d, f, 4).attention,
      get bO() { m.dispose(); return new Float32Array(d); } }), 'MultiHeadAttention.setWeights'],
    [(m) => m.precomputeKeyValue(withGetter(x, () => m.dispose())),
      'MultiHeadAttention.precomputeKeyValue'],
  ];
  for (const [call, where] of cases) {
    const mha = attention();
    expectError(() => call(mha), Error, during(where, 'this MultiHeadAttention'));
    expect(mha.disposed).toBe(true);
  }
  const encoder = track(new module.TransformerEncoderLayer(layerConfig));
  encoder.setWeights(randomLayerWeights(d, f, 5));
  expectError(() => encoder.forward(withGetter(x, () => encoder.dispose())), Error,
    during('TransformerEncoderLayer.forward', 'this TransformerEncoderLayer'));
});

test('a cache or memory it is given, and the cache\'s own calls', () => {
  const mha = attention();
  const cache = mha.createKVCache({ batch: B, maxLength: 4 });
  expectError(() => mha.forwardIncremental(step, cache,
    { get window() { cache.dispose(); return undefined; } }), Error,
  during('MultiHeadAttention.forwardIncremental: cache', 'the KVCache'));
  const other = mha.createKVCache({ batch: B, maxLength: 4 });
  const keys = { data: randomFloats(B * d, 6), shape: [B, 1, d] };
  expectError(() => other.append(withGetter(keys, () => other.dispose()), keys), Error,
    during('KVCache.append', 'this KVCache'));

  const decoder = track(new module.TransformerDecoderLayer(layerConfig));
  decoder.setWeights(randomLayerWeights(d, f, 7, { decoder: true }));
  const layerCache = decoder.createKVCache({ batch: B, maxLength: 4 });
  const memory = { data: randomFloats(B * 5 * d, 8), shape: [B, 5, d] };
  expectError(() => decoder.forwardIncremental(step, layerCache,
    withGetter(memory, () => layerCache.dispose())), Error,
  during('TransformerDecoderLayer.forwardIncremental: cache', 'the KVCache'));

  // The attention and the decoder go on, with new caches.
  const fresh = track(mha.createKVCache({ batch: B, maxLength: 4 }));
  expect(mha.forwardIncremental(step, fresh).output.shape).toEqual([B, 1, d]);
  const freshLayer = track(decoder.createKVCache({ batch: B, maxLength: 4 }));
  expect(decoder.forwardIncremental(step, freshLayer, memory).shape).toEqual([B, 1, d]);
});

test('the whole module, from a getter: its objects say so; a new module works', async () => {
  const own = await createAttentionModule({ simd: true, relaxedSimd: false, threads: 1 });
  const mha = new own.MultiHeadAttention(mhaConfig);
  mha.setWeights(randomLayerWeights(d, f, 9).attention);
  expectError(() => mha.forward(withGetter(x, () => own.dispose())), Error,
    during('MultiHeadAttention.forward', 'this MultiHeadAttention'));
  expectError(() => mha.forward(x), Error,
    'MultiHeadAttention.forward: this MultiHeadAttention was disposed; create a new one');
  expect(attention().forward(x).output.shape).toEqual([B, T, d]);
});

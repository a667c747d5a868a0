// No leaks: the C++ heap (bytes malloc'ed), the wasm memory size and the
// Embind handles stay flat over thousands of forward calls, failing calls,
// quantizeInt8 calls and create/dispose cycles. Nothing here relies on garbage collection.
import { goldenCaseNames, loadGoldenCase, mhaArguments, pytorchState } from './support/golden.mjs';
import { loadBuilds } from './support/modules.mjs';

const builds = await loadBuilds();
const c = loadGoldenCase(goldenCaseNames('mha').find((n) => {
  const x = loadGoldenCase(n);
  return x.tensors.key_padding_mask !== undefined;
}) ?? goldenCaseNames('mha')[0]);
const a = mhaArguments(c);
const N = 3000;

function snapshot(module) {
  const { heapBytes, allocatedBytes, jsHandles } = module.memoryStats();
  return { heapBytes, allocatedBytes, jsHandles };
}

describe.each(Object.keys(builds))('%s build', (build) => {
  const module = builds[build];

  test(`${N} forward calls with every output`, () => {
    const mha = new module.MultiHeadAttention(a.config);
    try {
      mha.setWeights(a.weights);
      const options = {
        ...a.options, returnAttnWeights: true, returnPerHeadOutput: true, returnIntermediates: true,
      };
      mha.forward(a.query, a.key, a.value, options); // workspace reaches its size
      const before = snapshot(module);
      for (let i = 0; i < N; i++) mha.forward(a.query, a.key, a.value, options);
      expect(snapshot(module)).toEqual(before);
    } finally {
      mha.dispose();
    }
  });

  test(`${N} failing calls`, () => {
    const mha = new module.MultiHeadAttention(a.config);
    try {
      mha.setWeights(a.weights);
      const bad = { data: new Float32Array(a.query.data.length), shape: [...a.query.shape] };
      bad.data[bad.data.length - 1] = NaN; // rejected in C++, after the copy
      const mask = new Uint8Array(1);
      const tryAll = () => {
        expect(() => mha.forward(bad)).toThrow('is NaN');
        expect(() => mha.forward(a.query, undefined, undefined, { keyPaddingMask: mask }))
          .toThrow('keyPaddingMask');
        expect(() => mha.setWeights({ ...a.weights, wQ: new Float32Array(3) })).toThrow('wQ');
        expect(() => new module.MultiHeadAttention({ ...a.config, backend: 'nope' }))
          .toThrow('backend');
      };
      tryAll();
      const before = snapshot(module);
      for (let i = 0; i < N / 4; i++) tryAll();
      expect(snapshot(module)).toEqual(before);
    } finally {
      mha.dispose();
    }
  });

  test(`${N} quantizeInt8 calls, half of them failing`, () => {
    const rows = a.weights.wO.length / a.config.dModel;
    const bad = Float32Array.from(a.weights.wO);
    bad[5] = NaN;
    const both = () => {
      module.quantizeInt8(a.weights.wO, rows, a.config.dModel);
      expect(() => module.quantizeInt8(bad, rows, a.config.dModel)).toThrow('is NaN');
    };
    both();
    const before = snapshot(module);
    for (let i = 0; i < N / 2; i++) both();
    expect(snapshot(module)).toEqual(before);
  });

  test(`${N} create / setWeights / forward / dispose cycles`, () => {
    const cycle = (i) => {
      const mha = new module.MultiHeadAttention(a.config);
      if (i % 2) mha.setWeights(a.weights);
      else mha.setWeightsFromPyTorch(pytorchState(c));
      mha.forward(a.query, a.key, a.value, a.options);
      mha.dispose();
    };
    cycle(0);
    cycle(1);
    const before = snapshot(module);
    for (let i = 0; i < N; i++) cycle(i);
    expect(snapshot(module)).toEqual(before);
  });
});

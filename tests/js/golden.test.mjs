// Every `kind: mha` golden case through every backend of every wasm build,
// with setWeights (X @ W layout) and with setWeightsFromPyTorch (the same
// weights as torch.nn.MultiheadAttention stores them).
import {
  expectMatchesGolden, goldenCaseNames, loadGoldenCase, mhaArguments, pytorchState,
} from './support/golden.mjs';
import { backendMatrix, loadBuilds, track, withMha } from './support/modules.mjs';

const builds = await loadBuilds();
const cases = goldenCaseNames('mha').map(loadGoldenCase);

test('the golden folder has mha cases, self and cross', () => {
  expect(cases.length).toBeGreaterThanOrEqual(5);
  expect(cases.some((c) => c.config.self_attention)).toBe(true);
  expect(cases.some((c) => !c.config.self_attention)).toBe(true);
});

test('each build reports what it is', () => {
  expect([builds.relaxed.build, builds.simd.build, builds.nosimd.build])
    .toEqual(['relaxed-simd', 'simd', 'nosimd']);
  expect([builds.relaxed.simd, builds.simd.simd, builds.nosimd.simd]).toEqual([true, true, false]);
  // The scalar backend is the non-SIMD build's alone, xsimd the SIMD
  // build's (the others leave them out for size).
  expect(builds.simd.backends).toEqual(['highway', 'xsimd']);
  expect(builds.relaxed.backends).toEqual(['highway']);
  expect(builds.nosimd.backends).toEqual(['highway', 'scalar']);
  for (const m of Object.values(builds)) expect(m.backend).toBe(m.backends[0]);
});

function run(module, backend, c, load) {
  const a = mhaArguments(c);
  return withMha(module, { ...a.config, backend }, (mha) => {
    expect(mha.config.backend).toBe(backend);
    load(mha, a);
    return mha.forward(a.query, a.key, a.value, {
      ...a.options, returnAttnWeights: true, returnPerHeadOutput: true,
    });
  });
}

const matrix = backendMatrix(builds);

describe.each(matrix)('%s build, %s backend', (build, backend, module) => {
  test.each(cases.map((c) => [c.name, c]))('%s: output, attention weights, per-head output', (_, c) => {
    expectMatchesGolden(run(module, backend, c, (mha, a) => mha.setWeights(a.weights)), c);
  });

  test.each(cases.map((c) => [c.name, c]))('%s via setWeightsFromPyTorch', (_, c) => {
    const result = run(module, backend, c, (mha) => mha.setWeightsFromPyTorch(pytorchState(c)));
    expectMatchesGolden(result, c);
  });
});

test('kernel tables: both SIMD builds run the same Highway target, the non-SIMD build another', () => {
  const kernels = (m, backend) =>
    withMha(m, { dModel: 8, numHeads: 2, backend }, (mha) => mha.kernels);
  expect(kernels(builds.simd, 'highway')).toMatch(/^highway:/);
  expect(kernels(builds.nosimd, 'highway')).toMatch(/^highway:/);
  expect(kernels(builds.simd, 'highway')).not.toBe(kernels(builds.nosimd, 'highway'));
  expect(kernels(builds.nosimd, 'scalar')).toBe('scalar');
  // Relaxed SIMD changes the instructions, not the Highway target.
  expect(kernels(builds.relaxed, 'highway')).toBe(kernels(builds.simd, 'highway'));
});

test('PyTorch state with underscore names (out_proj_weight) and a 2-D query', () => {
  const c = cases.find((x) => x.config.self_attention && x.config.batch === 1);
  const a = mhaArguments(c);
  const mha = track(new builds.simd.MultiHeadAttention(a.config));
  mha.setWeightsFromPyTorch(pytorchState(c, { dotNames: false }));
  const query = { data: a.query.data, shape: a.query.shape.slice(1) };
  const r = mha.forward(query, undefined, undefined,
    { ...a.options, returnAttnWeights: true, returnPerHeadOutput: true });
  expectMatchesGolden(r, c, { batched: false });
});

test('passing the query again as key and value equals self-attention', () => {
  const c = cases.find((x) => x.config.self_attention);
  const a = mhaArguments(c);
  const mha = track(new builds.simd.MultiHeadAttention(a.config));
  mha.setWeights(a.weights);
  expectMatchesGolden(mha.forward(a.query, a.query, a.query, a.options), c);
  expectMatchesGolden(mha.forward(a.query, a.query, undefined, a.options), c);
  const copy = { data: a.query.data.slice(), shape: [...a.query.shape] };
  expectMatchesGolden(mha.forward(a.query, copy, copy, a.options), c);
});

test('cross-attention with value omitted uses value = key', () => {
  const c = cases.find((x) => !x.config.self_attention && x.config.kdim === x.config.vdim);
  const a = mhaArguments(c);
  const mha = track(new builds.simd.MultiHeadAttention(a.config));
  mha.setWeights(a.weights);
  const withValue = mha.forward(a.query, a.key, a.key);
  const omitted = mha.forward(a.query, a.key);
  expect(omitted.output.data).toEqual(withValue.output.data);
});

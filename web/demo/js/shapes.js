// Shapes walk-through: the worked example (B=2, T=10, d_model=512, 8 heads)
// stage by stage, self- or cross-attention (T_k = 16), with one key/value
// head per query head or grouped-query heads (2 key/value heads). The
// forwards run in the page's worker pool, all four at load; the switches
// only redraw what they computed.
import {
  attentionModule, attentionPool, initPage, el, heatmap, legend, formatShape, formatNumber, showError,
  withPooledMha, requireFunction, onWidthChange, scaleRange, showBuild,
} from './common.js';
import {
  B, T, D, H, DK, TK_CROSS, KV_CHOICES, SENTENCES, MEMORY_SENTENCES, HEADS, example,
} from './shapes-example.js';

const SHOWN_FEATURES = 64;

// The example's inputs, weights and configs, filled in once the module has
// loaded; the browser test checks the blocks against its own library call on them.
export const INPUTS = {};

// ---------------------------------------------------------------------------
// The page's own loops: the scores (which the fused library never stores),
// the checks, and merging the library's per-head tensors back into tokens
// ---------------------------------------------------------------------------

// x [m, k] @ w [k, n] + b
function linear(x, m, k, w, n, b) {
  const out = new Float32Array(m * n);
  for (let i = 0; i < m; i++) {
    const o = i * n;
    if (b) out.set(b, o);
    for (let p = 0; p < k; p++) {
      const a = x[i * k + p];
      const r = p * n;
      for (let j = 0; j < n; j++) out[o + j] += a * w[r + j];
    }
  }
  return out;
}

// [B, heads, t, dk] -> [B, t, heads*dk] (no arithmetic)
function concatHeads(z, t, heads = H) {
  const out = new Float32Array(z.length);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < heads; h++) {
      for (let i = 0; i < t; i++) {
        const src = ((b * heads + h) * t + i) * DK;
        out.set(z.subarray(src, src + DK), (b * t + i) * heads * DK + h * DK);
      }
    }
  }
  return out;
}

/** The key/value head query head h reads: h / (H / Hkv). */
const kvHeadOf = (h, kvHeads) => Math.floor(h / (H / kvHeads));

// Q_h K_g^T / sqrt(dk), g the kv head of h: [B, H, T, Tk]
function scores(qh, kh, tk, kvHeads) {
  const out = new Float32Array(B * H * T * tk);
  const s = 1 / Math.sqrt(DK);
  for (let bh = 0; bh < B * H; bh++) {
    const kvRow = Math.floor(bh / H) * kvHeads + kvHeadOf(bh % H, kvHeads);
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < tk; j++) {
        let acc = 0;
        const q = (bh * T + i) * DK;
        const k = (kvRow * tk + j) * DK;
        for (let c = 0; c < DK; c++) acc += qh[q + c] * kh[k + c];
        out[(bh * T + i) * tk + j] = acc * s;
      }
    }
  }
  return out;
}

function softmaxRows(x, cols) {
  const out = new Float32Array(x.length);
  for (let r = 0; r < x.length / cols; r++) {
    let max = -Infinity;
    for (let c = 0; c < cols; c++) max = Math.max(max, x[r * cols + c]);
    let sum = 0;
    for (let c = 0; c < cols; c++) sum += (out[r * cols + c] = Math.exp(x[r * cols + c] - max));
    for (let c = 0; c < cols; c++) out[r * cols + c] /= sum;
  }
  return out;
}

function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

// ---------------------------------------------------------------------------
// One run: every stage's tensors
// ---------------------------------------------------------------------------

async function compute(module, pool, mode, kvHeads) {
  const { X, MEMORY, weights, config } = INPUTS;
  const layerWeights = weights[kvHeads];
  const grouped = kvHeads < H;
  const cross = mode === 'cross';
  const tk = cross ? TK_CROSS : T;
  const query = { data: X, shape: [B, T, D] };
  const memory = cross ? { data: MEMORY, shape: [B, TK_CROSS, D] } : undefined;

  const lib = await withPooledMha(pool, config[kvHeads], layerWeights, (mha) =>
    mha.forward(query, memory, undefined,
      { returnAttnWeights: true, returnPerHeadOutput: true, returnIntermediates: true }));

  // The library returns Q, K, V already split into heads; the projection
  // stage shows them before the split, heads merged back (a reshape).
  const qh = lib.q.data;
  const kh = lib.k.data;
  const vh = lib.v.data;
  const q = concatHeads(qh, T);
  const k = concatHeads(kh, tk, kvHeads);
  const v = concatHeads(vh, tk, kvHeads);
  // The scores from the library's q and k: the fused kernels never store them.
  const s = scores(qh, kh, tk, kvHeads);
  const pPage = softmaxRows(s, tk);
  const p = lib.attnWeights.data;
  const z = lib.headOutput.data;
  const concat = concatHeads(z, T);
  const outPage = linear(concat, B * T, D, layerWeights.wO, D, layerWeights.bO);
  const out = lib.output.data;

  // sum_h z_h W_O^h + b_O == output
  const summed = new Float32Array(B * T * D);
  const ph = lib.perHeadOutput.data;
  for (let b = 0; b < B; b++) {
    for (let i = 0; i < T; i++) {
      for (let c = 0; c < D; c++) {
        let acc = layerWeights.bO[c];
        for (let h = 0; h < H; h++) acc += ph[((b * H + h) * T + i) * D + c];
        summed[(b * T + i) * D + c] = acc;
      }
    }
  }

  const residual = new Float32Array(B * T * D);
  for (let i = 0; i < residual.length; i++) residual[i] = X[i] + out[i];
  // The library's LayerNorm (the layers API); without it the last stage
  // says so instead of computing it here. On the page's own module: 20 rows
  // of 512 take far less than a round trip to a worker.
  let normed = null;
  let normError = null;
  let mean = NaN;
  let std = NaN;
  try {
    normed = requireFunction(module, 'layerNorm')({ data: residual, shape: [B, T, D] },
      { gamma: new Float32Array(D).fill(1), beta: new Float32Array(D), eps: 1e-5 });
    // Mean and standard deviation of one normalised token (should be 0 and 1).
    const row = normed.data.subarray(0, D);
    mean = row.reduce((a, x) => a + x, 0) / D;
    std = Math.sqrt(row.reduce((a, x) => a + (x - mean) ** 2, 0) / D);
  } catch (e) {
    normError = e;
  }

  const tokens = (t) => ({ kind: 'tokens', t });
  const heads = (t) => ({ kind: 'heads', t });
  const kvHeadsView = (t) => ({ kind: 'heads', t, kvHeads });
  const attn = { kind: 'attn', tk, keys: cross ? MEMORY_SENTENCES : SENTENCES };
  const kvWidth = kvHeads * DK;
  return [
    {
      id: 'input', title: 'Input', formula: cross ? 'X (queries), M (memory)' : 'X',
      explain: (cross
        ? 'Queries come from X; keys and values from the memory M, here 16 tokens of an encoder\'s input. '
        : 'Each of the B sequences has T tokens, each a d_model-wide vector. ') +
        'Here: words (a vector per word, seeded by it) plus the positional encoding.',
      tensors: [
        { id: 'X', name: 'X', shape: query.shape, data: X, view: tokens(T), source: 'input' },
        cross && { id: 'M', name: 'M (memory)', shape: memory.shape, data: MEMORY, view: tokens(TK_CROSS), isNew: true, source: 'input' },
      ],
    },
    {
      id: 'project', title: 'Project to Q, K, V',
      formula: cross ? 'Q = X W_Q + b_Q,  K = M W_K + b_K,  V = M W_V + b_V'
        : 'Q = X W_Q + b_Q,  K = X W_K + b_K,  V = X W_V + b_V',
      explain: (grouped
        ? `W_Q is [512, 512]; W_K and W_V are [512, ${kvWidth}]: ${kvHeads} key/value heads of 64 for 8 query heads. `
        : 'Three [512, 512] projections; every head reads its own 64 of the 512 columns. ') +
        'The library returns Q, K and V already split into heads; shown here with the heads put back side by side.',
      tensors: [
        { id: 'Q', name: 'Q', shape: [B, T, D], data: q, view: tokens(T), source: 'library-merged', query: true },
        { id: 'K', name: 'K', shape: [B, tk, kvWidth], data: k, view: tokens(tk), source: 'library-merged' },
        { id: 'V', name: 'V', shape: [B, tk, kvWidth], data: v, view: tokens(tk), source: 'library-merged' },
      ],
    },
    {
      id: 'split', title: 'Split into heads',
      formula: grouped ? 'Q → [B, H, T, d_k];  K, V → [B, H_kv, T_k, d_k]' : 'reshape [B, T, H, d_k], transpose → [B, H, T, d_k]',
      explain: grouped
        ? `No arithmetic: query head h takes features 64h … 64h+63 of Q; K and V have ${kvHeads} heads, and query head h ` +
          `reads key/value head ⌊h / ${H / kvHeads}⌋ (heads 0–3 share kv head 0, heads 4–7 kv head 1).`
        : 'No arithmetic: head h takes features 64h … 64h+63 of every token.',
      tensors: [
        { id: 'Qh', name: 'Q heads', shape: lib.q.shape, data: qh, view: heads(T), source: 'library', query: true },
        { id: 'Kh', name: grouped ? 'K kv heads' : 'K heads', shape: lib.k.shape, data: kh, view: kvHeadsView(tk), source: 'library' },
        { id: 'Vh', name: grouped ? 'V kv heads' : 'V heads', shape: lib.v.shape, data: vh, view: kvHeadsView(tk), source: 'library' },
      ],
    },
    {
      id: 'scores', title: 'Scores',
      formula: grouped ? 'S_h = Q_h K_gᵀ / √d_k,  g = ⌊h / 4⌋   (√64 = 8)' : 'S_h = Q_h K_hᵀ / √d_k   (√64 = 8)',
      explain: 'One score per (query, key) pair and head: how well query i matches key j. ' +
        'Computed on this page from the library\'s Q and K heads: the fused kernels never store the scores.',
      tensors: [{ id: 'scores', name: 'scores', shape: [B, H, T, tk], data: s, view: attn, source: 'page' }],
    },
    {
      id: 'softmax', title: 'Softmax over keys', formula: 'P_h = softmax(S_h) along each row',
      explain: 'Every row is a probability distribution over the keys (sums to 1).',
      check: `library's weights vs softmax of this page's scores: max |diff| = ${formatNumber(maxAbsDiff(p, pPage), 2)}`,
      checkOk: maxAbsDiff(p, pPage) < 1e-4,
      tensors: [{ id: 'probs', name: 'attention weights', shape: lib.attnWeights.shape, data: p, view: attn, scale: 'prob', source: 'library' }],
    },
    {
      id: 'heads', title: 'Head outputs', formula: 'z_h = P_h V_h',
      explain: 'Each query gets a weighted average of the value vectors, per head.',
      tensors: [{ id: 'z', name: 'z', shape: lib.headOutput.shape, data: z, view: heads(T), source: 'library' }],
    },
    {
      id: 'concat', title: 'Concatenate heads', formula: 'concat(z_0, …, z_7) → [B, T, H·d_k]',
      explain: 'The inverse of the split: head h\'s 64 values go back to features 64h … 64h+63 (shown: the selected head\'s slot).',
      tensors: [{ id: 'concat', name: 'concat', shape: [B, T, H * DK], data: concat, view: { kind: 'tokens', t: T, slot: true }, source: 'library-merged' }],
    },
    {
      id: 'wo', title: 'Output projection', formula: 'O = concat W_O + b_O = Σ_h z_h W_Oʰ + b_O',
      explain: 'W_Oʰ are rows 64h … 64h+63 of W_O: each head\'s own contribution to the output, in model space.',
      check: `library's O vs concat W_O + b_O on this page: max |diff| = ${formatNumber(maxAbsDiff(out, outPage), 2)}; ` +
        `Σ_h contributions + b_O vs output: ${formatNumber(maxAbsDiff(out, summed), 2)}`,
      checkOk: maxAbsDiff(out, outPage) < 1e-3 && maxAbsDiff(out, summed) < 1e-3,
      tensors: [
        { id: 'output', name: 'O', shape: lib.output.shape, data: out, view: tokens(T), source: 'library' },
        { id: 'perHead', name: 'z_h W_Oʰ (per head)', shape: lib.perHeadOutput.shape, data: ph, view: { kind: 'headsModel', t: T }, source: 'library' },
      ],
    },
    {
      id: 'norm', title: 'Residual + LayerNorm', formula: 'Y = LayerNorm(X + O)',
      explain: 'Add the layer\'s input back, then normalise each token to mean 0 and variance 1 (then γ, β).',
      check: normError ? `not available: ${normError.message}`
        : `token 0 of batch 0 after LayerNorm: mean ${formatNumber(mean, 3)}, std ${formatNumber(std, 3)}`,
      checkOk: !normError && Math.abs(mean) < 1e-3 && Math.abs(std - 1) < 1e-2,
      error: normError,
      tensors: [normed && { id: 'Y', name: 'Y', shape: normed.shape, data: normed.data, view: tokens(T), source: 'library' }],
    },
  ].map((stage) => ({ ...stage, tensors: stage.tensors.filter(Boolean) }));
}

// ---------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------

// The columns of a view that are 0 in every row: the features a hand-built
// head's query leaves empty, drawn grey and counted in a note, so that a
// query of 8 features out of 64 does not look like an empty heatmap.
function zeroColumns({ data, rows, cols }) {
  const zero = new Set();
  for (let c = 0; c < cols; c++) {
    let r = 0;
    while (r < rows && data[r * cols + c] === 0) r++;
    if (r === rows) zero.add(c);
  }
  return zero;
}

// A rows x cols matrix copied out of a tensor for the chosen batch and head.
function viewOf(tensor, b, h) {
  const { view, shape, data } = tensor;
  const copy = (rows, cols, offset, stride, col0) => {
    const out = new Float32Array(rows * cols);
    for (let r = 0; r < rows; r++) {
      out.set(data.subarray(offset + r * stride + col0, offset + r * stride + col0 + cols), r * cols);
    }
    return out;
  };
  switch (view.kind) {
    case 'tokens': {
      const width = shape[2];
      const col0 = view.slot ? h * DK : 0;
      return {
        data: copy(view.t, SHOWN_FEATURES, b * view.t * width, width, col0), rows: view.t, cols: SHOWN_FEATURES,
        head: col0 / DK,
        slice: view.slot ? `batch ${b}, features ${col0}–${col0 + DK - 1} (head ${h}'s slot)`
          : `batch ${b}, features 0–${SHOWN_FEATURES - 1} of ${width}`,
        xTitle: 'features', yTitle: 'tokens',
      };
    }
    case 'heads': {
      // Key and value heads: the one query head h reads.
      const [heads, head] = view.kvHeads ? [view.kvHeads, kvHeadOf(h, view.kvHeads)] : [H, h];
      return {
        data: copy(view.t, DK, (b * heads + head) * view.t * DK, DK, 0), rows: view.t, cols: DK, head,
        slice: heads < H ? `batch ${b}, kv head ${head} (read by query head ${h}): all ${DK} features`
          : `batch ${b}, head ${h}: all ${DK} features`,
        xTitle: 'features of the head', yTitle: 'tokens',
      };
    }
    case 'headsModel':
      return {
        data: copy(view.t, SHOWN_FEATURES, (b * H + h) * view.t * D, D, 0), rows: view.t, cols: SHOWN_FEATURES,
        slice: `batch ${b}, head ${h}, features 0–${SHOWN_FEATURES - 1} of ${D}`, xTitle: 'features', yTitle: 'tokens',
      };
    case 'attn':
      return {
        data: copy(T, view.tk, (b * H + h) * T * view.tk, view.tk, 0), rows: T, cols: view.tk,
        slice: `batch ${b}, head ${h} (${HEADS[h].name})`, xTitle: 'keys (columns)', yTitle: 'queries (rows)', square: true,
        rowLabels: SENTENCES[b], colLabels: view.keys[b],
      };
    default:
      throw new Error(`unknown view ${view.kind}`);
  }
}

// Where a tensor's numbers come from, said under its heatmap.
const SOURCES = {
  input: null,
  library: 'from the library',
  'library-merged': 'from the library, heads merged',
  page: 'computed on this page',
};

const state = { mode: 'self', kv: H, batch: 0, head: 0, results: {}, shapes: {} };
const key = (mode, kv) => `${mode} ${kv}`;

// What the outline compares with: with one kv head per query head, the other
// attention kind; with grouped heads, the same kind with one kv head per query head.
function comparison() {
  if (state.kv === H) {
    const mode = state.mode === 'self' ? 'cross' : 'self';
    return { shapes: state.shapes[key(mode, H)], name: mode };
  }
  return { shapes: state.shapes[key(state.mode, H)], name: `${H} kv heads` };
}

function render() {
  const stages = state.results[key(state.mode, state.kv)];
  const { shapes: other, name: otherName } = comparison();
  const pipeline = document.getElementById('pipeline');
  const width = Math.min(240, pipeline.clientWidth - 40);
  const squareWidth = Math.min(340, pipeline.clientWidth - 40);
  const changedNames = [];
  const blocks = stages.map((stage) => {
    let stageChanged = false;
    const tensors = stage.tensors.map((t) => {
      const otherShape = other[t.id];
      const changed = otherShape === undefined ? Boolean(t.isNew) : formatShape(otherShape) !== formatShape(t.shape);
      if (changed) {
        stageChanged = true;
        changedNames.push(t.name);
      }
      const v = viewOf(t, state.batch, state.head);
      const scale = t.scale ?? 'signed';
      const [vmin, vmax] = scale === 'prob' ? [0, 1] : scaleRange('signed', v.data);
      const note = t.isNew ? 'only in cross-attention' : changed ? `${otherName}: ${formatShape(otherShape)}` : null;
      const unused = t.query ? zeroColumns(v) : new Set();
      return el('div', {
        class: `tensor${changed ? ' changed' : ''}`,
        dataset: { tensor: t.id, shape: t.shape.join(','), changed: String(changed), source: t.source },
      },
      el('div', { class: 'tensor-head' },
        el('span', { class: 'tensor-name' }, t.name),
        el('span', { class: 'shape' }, formatShape(t.shape)),
        note ? el('span', { class: 'was' }, note) : null),
      heatmap({
        data: v.data, rows: v.rows, cols: v.cols, scale, vmin, vmax,
        isMasked: unused.size > 0 ? (r, c) => unused.has(c) : undefined,
        width: v.square ? squareWidth : width, maxCell: v.square ? 22 : 5, cellHeight: v.square ? undefined : 9,
        xTitle: v.xTitle, yTitle: v.yTitle, rowLabels: v.rowLabels, colLabels: v.colLabels,
        hint: `${v.slice}${SOURCES[t.source] ? ` · ${SOURCES[t.source]}` : ''}`,
        label: `${t.name}, ${formatShape(t.shape)}: heatmap of ${v.slice}`,
        describe: v.rowLabels
          ? (r, c, x) => `"${v.rowLabels[r]}" (${r}) \u2192 "${v.colLabels[c]}" (${c}): ${formatNumber(x, 4)}`
          : (r, c, x) => `${v.yTitle.split(' ')[0]} ${r}, ${v.xTitle.split(' ')[0]} ${c}: ${formatNumber(x, 4)}`,
      }),
      legend({ scale, vmin, vmax, title: scale === 'prob' ? 'probability' : 'value' }),
      unused.size > 0 ? el('p', { class: 'unused-note' },
        `Grey: ${unused.size} of these ${v.cols} features are 0 in every token. Head ${v.head} ` +
        `(${HEADS[v.head].name}) is built by hand, and its query uses only the other ` +
        `${v.cols - unused.size}.`) : null);
    });
    return el('section', { class: `stage${stageChanged ? ' changed' : ''}`, dataset: { stage: stage.id } },
      el('div', {},
        el('h3', {}, stage.title),
        el('div', { class: 'formula' }, stage.formula),
        el('p', { class: 'explain' }, stage.explain),
        stage.check ? el('p', { class: 'check' },
          el('span', { class: `pill ${stage.checkOk ? 'ok' : 'bad'}` }, stage.checkOk ? 'agrees' : 'differs'),
          ' ', stage.check) : null),
      el('div', { class: 'tensors' }, tensors));
  });
  pipeline.replaceChildren(...blocks);
  const summary = document.getElementById('changed-summary');
  summary.replaceChildren(state.kv < H
    ? `Outlined: what grouped-query heads change from ${H} key/value heads: ${changedNames.join(', ')}. ` +
      'Q, the scores, the weights and everything after keep all 8 heads.'
    : state.mode === 'self'
      ? `Outlined: the shapes that differ in cross-attention (${changedNames.join(', ')}).`
      : `Outlined: what changes from self-attention: ${changedNames.join(', ')}. Q, the head outputs and everything after keep T = 10 rows.`);
  Object.assign(document.body.dataset, { mode: state.mode, kvHeads: state.kv });
}

function set(change) {
  Object.assign(state, change);
  for (const mode of ['self', 'cross']) {
    document.getElementById(`mode-${mode}`).setAttribute('aria-pressed', String(mode === state.mode));
  }
  for (const kv of KV_CHOICES) document.getElementById(`kv-${kv}`).setAttribute('aria-pressed', String(kv === state.kv));
  render();
}

async function main() {
  initPage();
  const headSelect = document.getElementById('head');
  HEADS.forEach((head, h) => headSelect.append(el('option', { value: h }, `h = ${h}: ${head.name}`)));
  const [module, pool] = await Promise.all([attentionModule(), attentionPool()]);
  showBuild(module);
  Object.assign(INPUTS, example(module));
  const runs = KV_CHOICES.flatMap((kv) => ['self', 'cross'].map((mode) => ({ mode, kv })));
  const computed = await Promise.all(runs.map(({ mode, kv }) => compute(module, pool, mode, kv)));
  runs.forEach(({ mode, kv }, i) => {
    const stages = computed[i];
    state.results[key(mode, kv)] = stages;
    state.shapes[key(mode, kv)] = Object.fromEntries(stages.flatMap((s) => s.tensors.map((t) => [t.id, t.shape])));
  });
  const failed = state.results[key('self', H)].find((s) => s.error);
  if (failed) showError(failed.error);
  for (const mode of ['self', 'cross']) document.getElementById(`mode-${mode}`).addEventListener('click', () => set({ mode }));
  for (const kv of KV_CHOICES) document.getElementById(`kv-${kv}`).addEventListener('click', () => set({ kv }));
  document.getElementById('batch').addEventListener('change', (e) => { state.batch = Number(e.target.value); render(); });
  headSelect.addEventListener('change', (e) => { state.head = Number(e.target.value); render(); });
  onWidthChange(render);
  const params = new URLSearchParams(location.search);
  set({ mode: params.get('mode') === 'cross' ? 'cross' : 'self', kv: KV_CHOICES.includes(Number(params.get('kv'))) ? Number(params.get('kv')) : H });
  if (!failed) document.body.dataset.state = 'ready';
}

main().catch((e) => showError(e));

// The explorer with the visitor's own model open (web/demo/explorer.html,
// js/explorer-open.js): folders made at run time from the shared Hugging
// Face cases (../shared/hf-models: NAME_config.json as config.json,
// NAME.safetensors as model.safetensors, in a temporary folder), picked with
// the folder input or dropped. Checked against the checkpoint and against
// transformers' own hidden states (NAME_io.safetensors), read here at run
// time. Screenshots go to build/screenshots/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAttentionModule, readSafetensors } from '../../web/index.js';
import { repoRoot } from '../js/support/golden.mjs';
import { DESKTOP, demoSession, openDemoPage } from './launch.mjs';

const session = demoSession();
const HF = process.env.SA_HF_MODELS_DIR ?? path.resolve(repoRoot, '../shared/hf-models');
const SHOTS = path.join(repoRoot, 'build', 'screenshots');
const TIMEOUT = 180_000;
let scratch;
let sa;

before(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sa-explorer-'));
  sa = await createAttentionModule();
});
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

// A WordPiece tokenizer.json (BERT's normalizer, pre-tokenizer and
// [CLS] ... [SEP] template) whose ids fit a 100-token vocabulary.
const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
const WORDS = ['the', 'cat', 'sat', 'on', 'mat', 'dog', 'ran', 'a', 'big', '##s', '.', ','];
const VOCAB = Object.fromEntries([...SPECIALS, ...WORDS].map((t, i) => [t, i]));
function wordPieceTokenizer() {
  const special = (id) => ({ SpecialToken: { id, type_id: 0 } });
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: SPECIALS.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
      normalized: false, special: true })),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'TemplateProcessing', single: [special('[CLS]'), { Sequence: { id: 'A', type_id: 0 } }, special('[SEP]')],
      pair: [special('[CLS]'), { Sequence: { id: 'A', type_id: 0 } }, special('[SEP]'), { Sequence: { id: 'B', type_id: 1 } }, special('[SEP]')],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [VOCAB['[CLS]']], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [VOCAB['[SEP]']], tokens: ['[SEP]'] } } },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab: VOCAB },
  };
}

/** A model folder of shared case `name` in the scratch folder: { config, weights, tokenizer? } say what goes in. */
function modelFolder(name, { config = true, weights = true, tokenizer = null } = {}) {
  const dir = fs.mkdtempSync(path.join(scratch, `${name}-`));
  if (config) fs.copyFileSync(path.join(HF, `${name}_config.json`), path.join(dir, 'config.json'));
  if (weights) fs.copyFileSync(path.join(HF, `${name}.safetensors`), path.join(dir, 'model.safetensors'));
  if (tokenizer) fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  return dir;
}

const open = () => openDemoPage(session.browser, session.server, 'explorer.html');

// The page's last run of a model layer, as plain arrays.
const modelRun = (page) => page.evaluate(async () => {
  const { lastRun } = await import('/web/demo/js/explorer.js');
  const r = lastRun();
  const plain = (a) => Array.from(a, (v) => (v === -Infinity ? null : v));
  return {
    source: r.source, prefix: r.prefix, fed: r.fed, ids: r.ids, queries: r.queries, numHeads: r.numHeads,
    kvHeads: r.kvHeads, dModel: r.dModel, tq: r.tq, tk: r.tk, forwardOptions: r.forwardOptions,
    probs: plain(r.probs), scores: plain(r.scores), perHead: plain(r.perHead), output: plain(r.output),
    hidden: plain(r.hidden), input: plain(r.input), held: r.held,
  };
});

// Waits for the model's result after `action` (the page counts them in
// body[data-model-results]); it must be a run.
async function afterRun(page, action) {
  const results = await page.evaluate(() => Number(document.body.dataset.modelResults ?? 0));
  await action();
  await page.waitForFunction((n) => Number(document.body.dataset.modelResults ?? 0) > n, results, { timeout: 60_000 });
  const error = await page.$eval('#model-card', (c) => c.querySelector('.error')?.textContent ?? null);
  assert.equal(error, null, 'the model card shows an error');
  return modelRun(page);
}

const maxAbsDiff = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

/** Every head's share, summed, plus bO, is the output, token by token. */
function assertHeadsSum(run, bO, what) {
  const { numHeads, tq, dModel, perHead, output } = run;
  let worst = 0;
  for (let i = 0; i < tq; i++) {
    for (let c = 0; c < dModel; c++) {
      let sum = bO ? bO[c] : 0;
      for (let h = 0; h < numHeads; h++) sum += perHead[(h * tq + i) * dModel + c];
      worst = Math.max(worst, Math.abs(sum - output[i * dModel + c]));
    }
  }
  assert.ok(worst < 1e-5, `${what}: the heads' contributions + bO differ from the output by ${worst}`);
}

/** The weights of each query row sum to 1; `masked(i, j)` says which keys the page must show masked. */
function assertWeights(run, masked, what) {
  const { numHeads, tq, tk, probs, scores } = run;
  for (let h = 0; h < numHeads; h++) {
    for (let i = 0; i < tq; i++) {
      let sum = 0;
      for (let j = 0; j < tk; j++) {
        const at = (h * tq + i) * tk + j;
        sum += probs[at];
        assert.equal(scores[at] === null, masked(i, j), `${what}: head ${h} query ${i} key ${j} masked`);
      }
      assert.ok(Math.abs(sum - 1) < 1e-5, `${what}: head ${h} row ${i} sums to ${sum}`);
    }
  }
}

// Each head's heatmap is drawn: its canvas holds more than one colour.
async function assertMapsDrawn(page, heads, what) {
  const colours = await page.$$eval('#head-grid canvas', (canvases) => canvases.map((c) => {
    const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const seen = new Set();
    for (let p = 0; p < data.length; p += 4) seen.add(`${data[p]},${data[p + 1]},${data[p + 2]}`);
    return seen.size;
  }));
  assert.equal(colours.length, heads, `${what}: one heatmap per head`);
  colours.forEach((n, h) => assert.ok(n > 1, `${what}: head ${h}'s heatmap has ${n} colour`));
}

async function shoot(page, name) {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

test('server: the tokenizer library the explorer imports, and nothing else of node_modules', async () => {
  const get = (p) => fetch(new URL(p, session.server.url));
  const library = await get('/node_modules/@huggingface/tokenizers/dist/tokenizers.min.mjs');
  assert.equal(library.status, 200);
  assert.equal(library.headers.get('content-type'), 'text/javascript; charset=utf-8');
  assert.equal(library.headers.get('cross-origin-embedder-policy'), 'require-corp');
  assert.match(await library.text(), /Tokenizer/);
  for (const p of ['/node_modules/@huggingface/tokenizers/package.json', '/node_modules/@huggingface/tokenizers/dist/',
    '/node_modules/playwright-core/package.json', '/node_modules/../package.json', '/node_modules/%40huggingface/tokenizers/dist/tokenizers.min.mjs']) {
    assert.equal((await get(p)).status, 404, p);
  }
});

test('explorer: a Llama folder opens, layer 0 reads the checkpoint\'s embeddings of the ids typed', { timeout: TIMEOUT }, async () => {
  const file = await readSafetensors(path.join(HF, 'llama_layer.safetensors'));
  const io = await readSafetensors(path.join(HF, 'llama_layer_io.safetensors'));
  const p = await open();
  assert.equal(p.state, 'ready');
  await p.page.setInputFiles('#model-folder', modelFolder('llama_layer'));
  await p.page.waitForFunction(() => document.body.dataset.modelState === 'ready' && document.body.dataset.view === 'model');
  assert.match(await p.page.textContent('#model-status'), /^llama: 1 layer, config\.json \+ model\.safetensors, [\d.]+ MiB; no tokenizer\.json: type token ids\.$/);
  assert.deepEqual(await p.page.$$eval('#model-layer option', (o) => o.map((x) => x.textContent)), ['layers.0']);
  assert.equal(await p.page.inputValue('#model-input-kind'), 'ids');

  // transformers' input of layers.0 is the embeddings of its ids: find them
  // in the embedding matrix, and type them.
  const x = io.tensor('x');
  const table = file.tensor('embed_tokens.weight');
  const [vocab, d] = table.shape;
  const ids = Array.from({ length: x.shape[1] }, (_, t) => {
    const row = x.data.subarray(t * d, (t + 1) * d);
    return Array.from({ length: vocab }, (_, v) => v).find((v) => maxAbsDiff(row, table.data.subarray(v * d, (v + 1) * d)) === 0);
  });
  assert.ok(ids.every((v) => v !== undefined), 'every input row of the case is a row of embed_tokens');
  const run = await afterRun(p.page, () => p.page.fill('#model-input', ids.join(', ')));
  assert.deepEqual([run.source, run.prefix, run.fed, run.ids], ['model', 'layers.0', 'layers', ids]);
  assert.deepEqual([run.numHeads, run.kvHeads, run.dModel, run.tq, run.tk], [4, 2, 64, ids.length, ids.length]);
  assert.deepEqual(run.forwardOptions, { causal: true });
  assert.equal(maxAbsDiff(run.hidden, Array.from(x.data)), 0, 'the hidden states entering layers.0 are transformers\'');
  // The attention reads them through input_layernorm (RMSNorm, eps 1e-6).
  const gain = file.tensor('layers.0.input_layernorm.weight').data;
  const normed = run.hidden.map((v, k) => {
    const r = Math.floor(k / d);
    const ms = run.hidden.slice(r * d, (r + 1) * d).reduce((s, u) => s + u * u, 0) / d;
    return (v / Math.sqrt(ms + 1e-6)) * gain[k % d];
  });
  assert.ok(maxAbsDiff(run.input, normed) < 1e-5, `input_layernorm: ${maxAbsDiff(run.input, normed)}`);

  assert.ok(!file.names.includes('layers.0.self_attn.o_proj.bias'), 'Llama\'s o_proj has no bias');
  assertHeadsSum(run, null, 'llama layers.0');
  assertWeights(run, (i, j) => j > i, 'llama layers.0 (causal)');
  await assertMapsDrawn(p.page, 4, 'llama');
  assert.equal(await p.page.locator('#chart rect[data-head]').count(), 4 * ids.length);
  assert.match(await p.page.textContent('#model-fed'), /^layers\.0's self-attention on the model's hidden states: the checkpoint's embeddings of these tokens, then through its input_layernorm\.$/);
  // The built-in example's controls step aside.
  assert.equal(await p.page.locator('#sentence').isVisible(), false);
  await shoot(p.page, 'explorer-model-llama-layer-1280x800');

  // On a phone the card and the maps fit the screen.
  await p.page.setViewportSize({ width: 390, height: 844 });
  await p.page.waitForFunction(() => document.querySelector('#head-grid .hm-canvas')?.getBoundingClientRect().right <= 390);
  const { scroll, client } = await p.page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
  }));
  assert.ok(scroll <= client, `phone: the page is ${scroll}px wide on a ${client}px screen`);
  await shoot(p.page, 'explorer-model-llama-layer-390');
  await p.page.setViewportSize(DESKTOP);

  // Deselecting a head removes its heatmap and bars.
  await p.page.uncheck('#model-heads input[data-head="3"]');
  assert.equal(await p.page.locator('#head-grid [data-head="3"]').count(), 0);
  assert.equal(await p.page.locator('#chart rect[data-head="3"]').count(), 0);

  // An id past the vocabulary is told in the card; the page goes on.
  await p.page.fill('#model-input', `1 2 ${vocab}`);
  await p.page.waitForFunction(() => document.body.dataset.modelState === 'error');
  assert.equal(await p.page.textContent('#model-note .error'), `token id ${vocab} is past the embeddings' ${vocab} rows`);
  await afterRun(p.page, () => p.page.fill('#model-input', '5 6 7'));

  // Back to the built-in example.
  await p.page.click('#model-close');
  await p.page.waitForFunction(() => document.body.dataset.view === 'example' &&
    document.querySelectorAll('#head-grid [data-pattern="self"]').length === 1);
  assert.equal(await p.page.locator('#sentence').isVisible(), true);
  assert.deepEqual(p.problems, []);
  await p.context.close();
});

test('explorer: a BERT folder with its tokenizer.json: text in, layer 1 on layer 0\'s output', { timeout: TIMEOUT }, async () => {
  const file = await readSafetensors(path.join(HF, 'bert.safetensors'));
  const config = JSON.parse(fs.readFileSync(path.join(HF, 'bert_config.json'), 'utf8'));
  const p = await open();
  await p.page.setInputFiles('#model-folder', modelFolder('bert', { tokenizer: wordPieceTokenizer() }));
  await p.page.waitForFunction(() => document.body.dataset.modelState === 'ready' && document.body.dataset.view === 'model');
  assert.match(await p.page.textContent('#model-status'), /^bert: 2 layers, config\.json \+ model\.safetensors \+ tokenizer\.json, [\d.]+ MiB; text through its tokenizer\.json\.$/);
  assert.deepEqual(await p.page.$$eval('#model-layer option', (o) => o.map((x) => x.textContent)), ['encoder.layer.0', 'encoder.layer.1']);
  assert.equal(await p.page.inputValue('#model-input-kind'), 'text');

  // Layer 0 on "the cats sat on a big mat.": [CLS] the cat ##s ... [SEP].
  const tokens = ['[CLS]', 'the', 'cat', '##s', 'sat', 'on', 'a', 'big', 'mat', '.', '[SEP]'];
  const layer0 = await afterRun(p.page, () => p.page.fill('#model-input', 'The cats sat on a big mat.'));
  assert.deepEqual(layer0.queries, tokens);
  assert.deepEqual(layer0.ids, tokens.map((t) => VOCAB[t]));
  // The embeddings: LayerNorm(word + token type 0 + position), from the checkpoint.
  const d = config.hidden_size;
  const [word, type, position] = ['word', 'token_type', 'position'].map((n) => file.tensor(`embeddings.${n}_embeddings.weight`).data);
  const sum = new Float32Array(tokens.length * d);
  layer0.ids.forEach((id, i) => {
    for (let c = 0; c < d; c++) sum[i * d + c] = Math.fround(Math.fround(word[id * d + c] + type[c]) + position[i * d + c]);
  });
  const embedded = sa.layerNorm({ data: sum, shape: [tokens.length, d] }, { gamma: file.tensor('embeddings.LayerNorm.weight').data,
    beta: file.tensor('embeddings.LayerNorm.bias').data, eps: config.layer_norm_eps });
  assert.ok(maxAbsDiff(layer0.hidden, Array.from(embedded.data)) < 1e-6, 'BERT\'s embeddings');
  assert.deepEqual(layer0.input, layer0.hidden, 'a post-LN layer\'s attention reads the hidden states');

  // Layer 1 reads layer 0's output.
  const run = await afterRun(p.page, () => p.page.selectOption('#model-layer', { label: 'encoder.layer.1' }));
  assert.deepEqual([run.prefix, run.fed, run.numHeads, run.kvHeads, run.dModel], ['encoder.layer.1', 'layers', 4, 4, 64]);
  assert.equal(await p.page.textContent('#model-fed'), 'encoder.layer.1\'s self-attention on the model\'s hidden states: ' +
    'the checkpoint\'s embeddings of these tokens through layer encoder.layer.0.');
  const { module: layer, forwardOptions } = await sa.fromPretrained(config, file, { prefix: 'encoder.layer.0' });
  const below = layer.forward({ data: Float32Array.from(layer0.hidden), shape: [1, tokens.length, d] }, forwardOptions);
  layer.dispose();
  assert.ok(maxAbsDiff(run.hidden, Array.from(below.data)) < 1e-6, 'layer 1 reads layer 0\'s output');
  assertHeadsSum(run, file.tensor('encoder.layer.1.attention.output.dense.bias').data, 'bert encoder.layer.1');
  assertWeights(run, () => false, 'bert encoder.layer.1 (bidirectional)');
  await assertMapsDrawn(p.page, 4, 'bert');
  assert.deepEqual(await p.page.$$eval('#head-grid [data-head="0"] .hm-rowlabels span', (s) => s.map((x) => x.textContent)), tokens);
  await shoot(p.page, 'explorer-model-bert-layer1-1280x800');

  // Token ids instead: the text's ids, named by the tokenizer.
  const ids = await afterRun(p.page, () => p.page.selectOption('#model-input-kind', 'ids'));
  assert.equal(await p.page.inputValue('#model-input'), tokens.map((t) => VOCAB[t]).join(' '));
  assert.deepEqual(ids.queries, tokens);

  // A model past the size whose layers stay loaded: layer 0 is loaded for
  // the run and freed; the result is the same.
  assert.deepEqual(run.held, ['encoder.layer.0.attention', 'encoder.layer.0', 'encoder.layer.1.attention']);
  await p.page.evaluate(async () => {
    const { OpenModel } = await import('/web/demo/js/explorer-hf.js');
    OpenModel.keepLayersBytes = 0;
  });
  await afterRun(p.page, () => p.page.setInputFiles('#model-folder', modelFolder('bert', { tokenizer: wordPieceTokenizer() })));
  const freed = await afterRun(p.page, () => p.page.selectOption('#model-layer', { label: 'encoder.layer.1' }));
  assert.deepEqual(freed.held, ['encoder.layer.1.attention']);
  assert.deepEqual(freed.hidden, run.hidden, 'layer 1 reads layer 0\'s output');
  assert.deepEqual(freed.output, run.output);
  assert.deepEqual(p.problems, []);
  await p.context.close();
});

test('explorer: a GPT-2 folder: layer h.1 reads what transformers\' h.1 read', { timeout: TIMEOUT }, async () => {
  // transformers' input of h.1 comes from ids the case does not keep: find
  // them token by token (h.0 is causal, so token t's output depends on ids
  // 0..t only), each the one whose h.0 output is the case's row.
  const file = await readSafetensors(path.join(HF, 'gpt2.safetensors'));
  const config = JSON.parse(fs.readFileSync(path.join(HF, 'gpt2_config.json'), 'utf8'));
  const x = (await readSafetensors(path.join(HF, 'gpt2_io.safetensors'))).tensor('x');
  const [wte, wpe] = ['wte.weight', 'wpe.weight'].map((n) => file.tensor(n));
  const [vocab, d] = wte.shape;
  const { module: h0, forwardOptions } = await sa.fromPretrained(config, file, { prefix: 'h.0' });
  const ids = [];
  for (let t = 0; t < x.shape[1]; t++) {
    let best = { id: -1, diff: Infinity };
    for (let id = 0; id < vocab; id++) {
      const seq = [...ids, id];
      const e = new Float32Array(seq.length * d);
      seq.forEach((v, i) => { for (let c = 0; c < d; c++) e[i * d + c] = wte.data[v * d + c] + wpe.data[i * d + c]; });
      const out = h0.forward({ data: e, shape: [1, seq.length, d] }, forwardOptions).data;
      const diff = maxAbsDiff(out.subarray(t * d), x.data.subarray(t * d, (t + 1) * d));
      if (diff < best.diff) best = { id, diff };
    }
    assert.ok(best.diff < 1e-5, `token ${t}: no id gives transformers' row (closest ${best.diff})`);
    ids.push(best.id);
  }
  h0.dispose();

  const p = await open();
  await p.page.setInputFiles('#model-folder', modelFolder('gpt2'));
  await p.page.waitForFunction(() => document.body.dataset.modelState === 'ready');
  await afterRun(p.page, () => p.page.fill('#model-input', ids.join(' ')));
  const run = await afterRun(p.page, () => p.page.selectOption('#model-layer', { label: 'h.1' }));
  assert.deepEqual([run.prefix, run.fed, run.ids], ['h.1', 'layers', ids]);
  const diff = maxAbsDiff(run.hidden, Array.from(x.data));
  assert.ok(diff < 1e-5, `the hidden states entering h.1 differ from transformers' by ${diff}`);
  assertHeadsSum(run, file.tensor('h.1.attn.c_proj.bias').data, 'gpt2 h.1');
  assertWeights(run, (i, j) => j > i, 'gpt2 h.1 (causal)');
  assert.deepEqual(p.problems, []);
  await p.context.close();
});

/** Every head's share, summed, differs from the output by one bias, the same for every token. */
function assertHeadsSumUpToBias(run, what) {
  const { numHeads, tq, dModel, perHead, output } = run;
  const rest = (i, c) => output[i * dModel + c] - Array.from({ length: numHeads },
    (_, h) => perHead[(h * tq + i) * dModel + c]).reduce((a, b) => a + b, 0);
  let worst = 0;
  for (let i = 1; i < tq; i++) for (let c = 0; c < dModel; c++) worst = Math.max(worst, Math.abs(rest(i, c) - rest(0, c)));
  assert.ok(worst < 1e-5, `${what}: output - sum of the heads differs between tokens by ${worst}`);
}

// The first layer each case's model can take text at, what feeds it, and
// whether its self-attention is causal.
const FIRST_LAYERS = {
  bart_encoder: ['encoder.layers.0', 'layers', false],
  whisper_decoder: ['decoder.layers.0', 'embeddings', true],
  distilbert_layer: ['transformer.layer.0', 'layers', false],
  gptj_attention: ['h.0', 'layers', true],
  llama_attention: ['layers.0', 'layers', true],
  mistral_window: ['layers.0', 'layers', true],
  gemma2_attention: ['layers.0', 'layers', true],
  phi3_attention: ['layers.0', 'layers', true],
  qwen2_attention: ['layers.0', 'layers', true],
};

test('explorer: every other shared model opens and its first layer runs', { timeout: TIMEOUT }, async () => {
  const p = await open();
  for (const [name, [prefix, fed, causal]] of Object.entries(FIRST_LAYERS)) {
    const config = JSON.parse(fs.readFileSync(path.join(HF, `${name}_config.json`), 'utf8'));
    const run = await afterRun(p.page, () => p.page.setInputFiles('#model-folder', modelFolder(name)));
    assert.deepEqual([run.prefix, run.fed], [prefix, fed], name);
    assert.equal(run.forwardOptions.causal, causal, `${name}: causal`);
    // Mistral's and Gemma 2's sliding window of 4 keys hides the older ones.
    const window = config.sliding_window ?? Infinity;
    assertWeights(run, (i, j) => (causal && j > i) || i - j >= window, name);
    assertHeadsSumUpToBias(run, name);
    await assertMapsDrawn(p.page, run.numHeads, name);
    if (name === 'whisper_decoder') {
      // The encoder reads audio: listed, not offered.
      const options = await p.page.$$eval('#model-layer option', (o) => o.map((x) => [x.textContent, x.disabled]));
      assert.deepEqual(options, [
        ['encoder.layers.0 (the whisper encoder reads audio, not text)', true],
        ['decoder.layers.0 (on the embeddings)', false], ['decoder.layers.1 (on the embeddings)', false]]);
      assert.match(await p.page.textContent('#model-fed'), /^decoder\.layers\.0's self-attention applied to the checkpoint's embeddings of these tokens, then through its self_attn_layer_norm: not to the hidden states of the model/);
      await shoot(p.page, 'explorer-model-whisper-decoder-1280x800');
    }
  }
  assert.deepEqual(p.problems, []);
  await p.context.close();
});

test('explorer: dropped files open; a folder without config.json is told in the page', { timeout: TIMEOUT }, async () => {
  const p = await open();
  // Dropped: config.json and model.safetensors as files.
  const files = [['config.json', 'qwen3_attention_config.json'], ['model.safetensors', 'qwen3_attention.safetensors']]
    .map(([name, from]) => ({ name, data: fs.readFileSync(path.join(HF, from)).toString('base64') }));
  const drop = (list) => p.page.evaluate((dropped) => {
    const transfer = new DataTransfer();
    for (const { name, data } of dropped) {
      transfer.items.add(new File([Uint8Array.from(atob(data), (ch) => ch.charCodeAt(0))], name));
    }
    document.getElementById('model-drop').dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
  }, list);
  const run = await afterRun(p.page, () => drop(files));
  assert.deepEqual([run.prefix, run.numHeads, run.kvHeads], ['layers.0', 4, 2]);
  assertHeadsSum(run, null, 'qwen3 layers.0');
  assertWeights(run, (i, j) => j > i, 'qwen3 layers.0 (causal)');

  // A folder without config.json: the card says so, the model shown stays.
  await p.page.setInputFiles('#model-folder', modelFolder('bert', { config: false }));
  await p.page.waitForFunction(() => document.body.dataset.modelState === 'error');
  assert.equal(await p.page.textContent('#model-status .error'), 'Cannot open the model: no config.json in the folder ' +
    '(it has model.safetensors): the explorer needs the model\'s config.json and its .safetensors weights');
  assert.equal(await p.page.evaluate(() => document.body.dataset.view), 'model');
  await shoot(p.page, 'explorer-model-no-config-1280x800');
  // Dropped without weights.
  await drop(files.slice(0, 1));
  await p.page.waitForFunction(() => /no \.safetensors file/.test(document.querySelector('#model-status .error')?.textContent ?? ''));
  assert.notEqual(await p.page.evaluate(() => document.body.dataset.state), 'error', 'the page itself goes on');
  assert.deepEqual(p.problems, []);
  await p.context.close();
});

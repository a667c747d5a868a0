// The explorer's "Open your own model" card: a model folder picked or
// dropped (explorer-folder.js), its layers to choose from, its text (through
// its tokenizer.json) or token ids, and the run of the chosen layer's
// attention (explorer-hf.js) for the explorer to draw.
import { el } from './common.js';
import { FolderError, droppedFiles, readModelFolder } from './explorer-folder.js';
import { ModelError, OpenModel } from './explorer-hf.js';

const DEFAULT_TEXT = 'The quick brown fox jumps over the lazy dog because it was bored.';
const DEFAULT_IDS = 10;

// The tokenizer library, loaded on first use (the page's import map says
// where the demo server has it): @huggingface/tokenizers.
let tokenizerLibrary = null;
function loadTokenizerLibrary() {
  tokenizerLibrary ??= import('@huggingface/tokenizers').then((m) => m.Tokenizer);
  return tokenizerLibrary;
}

// Errors the visitor's files cause are told as they are; anything else
// (the package refusing a config field, ...) with its kind.
const message = (e) => (e instanceof FolderError || e instanceof ModelError ? e.message
  : `${e?.name ?? 'Error'}: ${e?.message ?? e}`);

/** Token ids as typed: whole numbers >= 0, apart by spaces or commas. */
function parseIds(text) {
  const parts = text.split(/[\s,]+/).filter((s) => s !== '');
  return parts.map((s) => {
    if (!/^\d+$/.test(s)) throw new ModelError(`token ids: '${s}' is not a whole number \u2265 0`);
    return Number(s);
  });
}

/**
 * Sets up the card. `request()` asks the page to compute and draw again;
 * `onView(open)` says whether a model is now shown. Returns { compute()
 * (the model's run, or a note), disposeRetired(), isOpen() }.
 */
export function modelCard({ module, pool, request, onView }) {
  const $ = (id) => document.getElementById(id);
  const ui = {
    folder: $('model-folder'), files: $('model-files'), drop: $('model-drop'), status: $('model-status'),
    controls: $('model-controls'), layer: $('model-layer'), kind: $('model-input-kind'), input: $('model-input'),
    inputLabel: $('model-input-label'), close: $('model-close'), fed: $('model-fed'), note: $('model-note'),
  };
  let model = null;
  let opening = 0;
  const retired = [];
  const inputs = { text: DEFAULT_TEXT, ids: '' };

  const setState = (s) => { document.body.dataset.modelState = s; };
  function showStatus(text, error = false) {
    ui.status.replaceChildren(error ? el('div', { class: 'error', role: 'alert' }, el('strong', {}, 'Cannot open the model: '), text) : text);
  }

  function retire() {
    if (model) retired.push(model);
    model = null;
  }

  async function open(files) {
    const ticket = ++opening;
    setState('loading');
    showStatus(`Reading ${files.length} file${files.length === 1 ? '' : 's'} \u2026`);
    try {
      const folder = await readModelFolder(files);
      const Tokenizer = folder.tokenizer ? await loadTokenizerLibrary().catch(() => null) : null;
      const next = new OpenModel(folder, { module, pool, Tokenizer });
      if (ticket !== opening) return;
      retire();
      model = next;
      const missing = folder.tokenizer && !Tokenizer
        ? ' The tokenizer library (@huggingface/tokenizers) did not load: run npm install at the repository\'s root.' : '';
      showStatus(`${model.summary()}.${missing}`);
      fillControls();
      onView(true);
      request();
    } catch (e) {
      if (ticket !== opening) return;
      showStatus(message(e), true);
      setState('error');
      if (!(e instanceof FolderError || e instanceof ModelError)) console.error(e);
    }
  }

  function fillControls() {
    const feedable = model.layers.filter((l) => l.fed !== null);
    ui.layer.replaceChildren(...model.layers.map((l, i) => el('option', { value: i, disabled: l.fed === null }, model.label(l))));
    ui.layer.value = String(model.layers.indexOf(feedable[0] ?? model.layers[0]));
    ui.kind.querySelector('option[value="text"]').disabled = !model.tokenizer;
    const { vocab } = feedable.length ? model.limits(feedable[0]) : { vocab: 1 };
    // Some ids spread over the vocabulary, the same each time.
    inputs.ids = Array.from({ length: DEFAULT_IDS }, (_, i) => (i * 37 + 11) % vocab).join(' ');
    setKind(model.tokenizer ? 'text' : 'ids');
    ui.controls.hidden = false;
  }

  function setKind(kind) {
    ui.kind.value = kind;
    ui.inputLabel.textContent = kind === 'text' ? 'Text' : 'Token ids (spaces or commas between)';
    ui.input.value = inputs[kind];
  }

  // The ids and the names of the tokens of the input, at most `limit` of them.
  function tokens(limit) {
    if (ui.kind.value === 'text') {
      const encoding = model.tokenizer.encode(ui.input.value);
      return { ids: encoding.ids.slice(0, limit), labels: encoding.tokens.slice(0, limit), dropped: Math.max(0, encoding.ids.length - limit) };
    }
    const ids = parseIds(ui.input.value);
    const name = (id) => model.tokenizer?.id_to_token(id) ?? String(id);
    return { ids: ids.slice(0, limit), labels: ids.slice(0, limit).map(name), dropped: Math.max(0, ids.length - limit) };
  }

  // What the drawn layer's attention read, said in the page.
  function fedLine(run, layer) {
    const below = model.layers.filter((l) => l.side === layer.side && l.index < layer.index);
    const norm = model.spec.preNorm ? `, then through its ${model.spec.preNorm.name}` : '';
    if (run.fed === 'embeddings') {
      return `${layer.prefix}'s self-attention applied to the checkpoint's embeddings of these tokens${norm}: not to the ` +
        'hidden states of the model, as the layers below it also attend to the encoder\'s output, which text alone does not give.';
    }
    const through = below.length === 0 ? ''
      : ` through ${below.length === 1 ? `layer ${below[0].prefix}` : `layers ${below[0].prefix} to ${below[below.length - 1].prefix}`}`;
    return `${layer.prefix}'s self-attention on the model's hidden states: the checkpoint's embeddings of these tokens${through}${norm}.`;
  }

  /** The chosen layer's run on the input: { run, note } or { note } when there is nothing to run. */
  async function compute() {
    const layer = model.layers[Number(ui.layer.value)];
    setState('running');
    try {
      if (layer.fed === null) throw new ModelError(`${layer.prefix}: ${layer.why}`);
      const limits = model.limits(layer);
      const { ids, labels, dropped } = tokens(limits.tokens);
      if (ids.length === 0) return { note: 'Type at least one token.' };
      const run = await model.run(layer, ids, labels);
      ui.fed.textContent = fedLine(run, layer);
      const { forwardOptions: o } = run;
      const options = Object.entries(o).filter(([, v]) => v !== false).map(([k, v]) => `${k}: ${JSON.stringify(v)}`);
      return {
        run,
        note: `${ids.length} tokens${dropped ? ` (the first ${limits.tokens}: ${dropped} left out)` : ''}, ids ${ids.join(' ')}; ` +
          `${run.numHeads} heads${run.kvHeads < run.numHeads ? ` reading ${run.kvHeads} key/value heads` : ''}, d_model ${run.dModel}` +
          `${options.length ? `; ${options.join(', ')}` : ''}; computed in ${pool.workers} workers.`,
      };
    } catch (e) {
      return { error: message(e) };
    }
  }

  /** Shows what compute() resolved to in the card. */
  function show({ run, note, error }) {
    ui.note.replaceChildren(error ? el('div', { class: 'error', role: 'alert' }, error) : note);
    if (error) ui.fed.textContent = '';
    setState(error ? 'error' : 'ready');
    // Counted for whoever waits for the next result (the browser test).
    document.body.dataset.modelResults = String(Number(document.body.dataset.modelResults ?? 0) + 1);
  }

  ui.folder.addEventListener('change', () => { if (ui.folder.files.length) open([...ui.folder.files]); });
  ui.files.addEventListener('change', () => { if (ui.files.files.length) open([...ui.files.files]); });
  ui.drop.addEventListener('dragover', (e) => { e.preventDefault(); ui.drop.classList.add('over'); });
  ui.drop.addEventListener('dragleave', () => ui.drop.classList.remove('over'));
  ui.drop.addEventListener('drop', (e) => {
    e.preventDefault();
    ui.drop.classList.remove('over');
    droppedFiles(e.dataTransfer).then(open, (err) => { showStatus(message(err), true); setState('error'); });
  });
  ui.kind.addEventListener('change', () => {
    const kind = ui.kind.value;
    inputs[kind === 'text' ? 'ids' : 'text'] = ui.input.value;
    // From text to ids: the ids the text had.
    if (kind === 'ids' && model.tokenizer) inputs.ids = model.tokenizer.encode(inputs.text).ids.join(' ');
    setKind(kind);
    request();
  });
  ui.input.addEventListener('input', () => { inputs[ui.kind.value] = ui.input.value; request({ debounce: true }); });
  ui.layer.addEventListener('change', () => request());
  ui.close.addEventListener('click', () => {
    retire();
    ui.controls.hidden = true;
    showStatus('');
    for (const input of [ui.folder, ui.files]) input.value = '';
    delete document.body.dataset.modelState;
    onView(false);
    request();
  });

  return {
    compute,
    show,
    isOpen: () => model !== null,
    /** Frees the models no longer shown; called where no run of theirs is in flight. */
    async disposeRetired() {
      while (retired.length) await retired.pop().dispose();
    },
  };
}

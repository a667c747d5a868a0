// sa.fromPretrained(config, file, { prefix }): one layer or attention of a
// Hugging Face model as the module's object, configured from its
// config.json (pretrained-config.js), its weights loaded by loadCheckpoint
// in the model's layout, with the forward options the model runs it with.
import { describe, optionsObject } from './arguments.js';
import { isTensorFile, loadCheckpoint } from './checkpoint-mapping.js';
import { OPTION_KEYS } from './option-keys.js';
import { pretrainedModule } from './pretrained-config.js';

// The options passed on to the object's config as they are.
const OBJECT_OPTIONS = ['backend', 'weights', 'cacheType'];

// `file` without the tensors `buffers` matches.
function withoutBuffers(where, file, buffers) {
  if (!isTensorFile(file) && (file === null || typeof file !== 'object' || Array.isArray(file))) {
    throw new TypeError(`${where}: file: expected a SafetensorsFile (readSafetensors, ` +
      `parseSafetensors) or an object of tensors by name, got ${describe(file)}`);
  }
  if (buffers === undefined) return file;
  if (!isTensorFile(file)) {
    return Object.fromEntries(Object.entries(file).filter(([name]) => !buffers.test(name)));
  }
  return { names: file.names.filter((name) => !buffers.test(name)),
    tensor: (name) => file.tensor(name), info: (name) => file.info(name) };
}

// `error` with where it happened in front.
const within = (at, error) => (error instanceof Error
  ? new /** @type {ErrorConstructor} */ (error.constructor)(`${at}: ${error.message}`,
    { cause: error })
  : error);

/**
 * sa.fromPretrained: `classes` is the module (or a copy of it) with its
 * MultiHeadAttention, TransformerEncoderLayer and TransformerDecoderLayer.
 * Resolves to { kind, module, forwardOptions, incrementalOptions (a causal
 * object's forwardIncremental options), loaded (loadCheckpoint's result) }.
 * Async, as the package's browser bundle loads this file only when called
 * (scripts/bundle_web.mjs).
 */
export async function fromPretrained(classes, config, file, options) {
  return loadPretrained((kind, objectConfig) => new classes[kind](objectConfig), config, file,
    options);
}

/**
 * pool.fromPretrained: as fromPretrained (the same messages), the object
 * one of the pool's, its weights set in its workers; disposed if they
 * cannot be.
 */
export async function fromPretrainedPooled(pool, config, file, options) {
  return loadPretrained((kind, objectConfig) => pool[kind](objectConfig), config, file, options);
}

// `create(kind, config)` makes the object, or a promise of it.
async function loadPretrained(create, config, file, options) {
  const where = 'fromPretrained';
  const o = optionsObject(where, options, OPTION_KEYS.FromPretrainedOptions);
  if (o.prefix !== undefined && typeof o.prefix !== 'string') {
    throw new TypeError(`${where}: options.prefix: expected a string, got ${describe(o.prefix)}`);
  }
  const spec = pretrainedModule(where, config, o.prefix);
  const tensors = withoutBuffers(where, file, spec.buffers);
  const whole = spec.kind === 'TransformerStack';
  const at = whole ? `${where}: ${config.model_type} (the whole model)`
    : `${where}: ${config.model_type} '${o.prefix}'`;
  const objectConfig = { ...spec.config };
  for (const key of OBJECT_OPTIONS) if (o[key] !== undefined) objectConfig[key] = o[key];
  let module;
  try {
    module = await create(spec.kind, objectConfig);
  } catch (error) {
    throw within(at, error);
  }
  let loaded;
  try {
    // A whole model's file holds more than the stack (embeddings, a head):
    // loaded.unused lists them.
    loaded = await loadCheckpoint(module, tensors, { prefix: o.prefix, layout: spec.layout,
      ...(whole ? { allowUnused: true } : {}) });
  } catch (error) {
    await module.dispose();
    throw within(at, error);
  }
  const { forwardOptions } = spec;
  // forwardIncremental is causal by itself and takes no causal option.
  const { causal, ...incrementalOptions } = forwardOptions;
  const steps = causal && typeof module.forwardIncremental === 'function';
  return { kind: spec.kind, module, forwardOptions, ...(steps ? { incrementalOptions } : {}),
    loaded };
}

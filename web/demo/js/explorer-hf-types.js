// What the explorer needs to know of each model_type the package's
// fromPretrained reads (web/src/pretrained-config.js configures the objects
// themselves): where the layers are (`list`, under encoder. and decoder.
// with `sides`), which module of a layer is its self-attention, the norm a
// pre-norm layer puts before it (so that the attention sees what it sees in
// the model), and how the token embeddings are made from the checkpoint.
// Tensor names are given without the model's own prefix (model., bert.,
// transformer., ...), which the explorer finds from the embedding's name.

const rmsEps = (c) => c.rms_norm_eps ?? 1e-6;

// Decoder-only models with RoPE: token embeddings only, RMSNorm before the
// attention.
const llamaLike = (norm = 'rms', scale = () => 1) => ({
  list: 'layers', attention: 'self_attn',
  preNorm: { name: 'input_layernorm', kind: norm, eps: rmsEps },
  embeddings: { tokens: ['embed_tokens.weight'], scale },
});

// Gemma multiplies the embeddings by sqrt(hidden_size), in the model's float type.
const gemmaScale = (c) => Math.fround(Math.sqrt(c.hidden_size));

// BERT and RoBERTa: word + position + token type 0, then a LayerNorm.
// RoBERTa counts positions from padding_idx + 1.
const bertLike = (firstPosition) => ({
  list: 'layer', attention: 'attention', attentionLayout: 'bert',
  embeddings: {
    tokens: ['embeddings.word_embeddings.weight'],
    positions: { name: 'embeddings.position_embeddings.weight', first: firstPosition },
    tokenType: 'embeddings.token_type_embeddings.weight',
    norm: { name: 'embeddings.LayerNorm', eps: (c) => c.layer_norm_eps ?? 1e-12 },
  },
});

// BART and Whisper: the decoder's layers also attend to the encoder's output,
// which text alone does not give: their self-attention is applied to the
// decoder's embeddings. Whisper's encoder reads audio.
const seq2seq = ({ preNorm, embeddings, textSides }) => ({
  list: 'layers', sides: true, attention: 'self_attn', preNorm, embeddings, textSides,
  chainSides: ['encoder'],
});

/** model_type -> what the explorer feeds its layers. */
export const MODEL_TYPES = new Map(Object.entries({
  bert: bertLike(() => 0),
  roberta: bertLike((c) => (c.pad_token_id ?? 1) + 1),
  distilbert: {
    list: 'layer', attention: 'attention',
    embeddings: {
      tokens: ['embeddings.word_embeddings.weight'],
      positions: { name: 'embeddings.position_embeddings.weight' },
      norm: { name: 'embeddings.LayerNorm', eps: () => 1e-12 },
    },
  },
  vit: { list: 'layer', attention: 'attention', noText: 'ViT reads image patches, not tokens' },
  gpt2: {
    list: 'h', attention: 'attn',
    preNorm: { name: 'ln_1', kind: 'layer', eps: (c) => c.layer_norm_epsilon ?? 1e-5 },
    embeddings: { tokens: ['wte.weight'], positions: { name: 'wpe.weight' } },
  },
  gptj: {
    list: 'h', attention: 'attn',
    preNorm: { name: 'ln_1', kind: 'layer', eps: (c) => c.layer_norm_epsilon ?? 1e-5 },
    embeddings: { tokens: ['wte.weight'] },
  },
  gpt_neox: {
    list: 'layers', attention: 'attention',
    preNorm: { name: 'input_layernorm', kind: 'layer', eps: (c) => c.layer_norm_eps ?? 1e-5 },
    embeddings: { tokens: ['embed_in.weight'] },
  },
  bart: seq2seq({
    textSides: ['encoder', 'decoder'],
    embeddings: {
      tokens: ['SIDE.embed_tokens.weight', 'shared.weight'],
      positions: { name: 'SIDE.embed_positions.weight', first: () => 2 },
      scale: (c) => (c.scale_embedding ? Math.sqrt(c.d_model) : 1),
      norm: { name: 'SIDE.layernorm_embedding', eps: () => 1e-5 },
    },
  }),
  whisper: seq2seq({
    textSides: ['decoder'],
    preNorm: { name: 'self_attn_layer_norm', kind: 'layer', eps: () => 1e-5 },
    embeddings: {
      tokens: ['SIDE.embed_tokens.weight'],
      positions: { name: 'SIDE.embed_positions.weight' },
    },
  }),
  llama: llamaLike(),
  mistral: llamaLike(),
  qwen2: llamaLike(),
  qwen3: llamaLike(),
  phi3: llamaLike(),
  gemma: llamaLike('gemma', gemmaScale),
  gemma2: llamaLike('gemma', gemmaScale),
}));

/** The number of layers config.json declares (per side for encoder-decoder models), or undefined. */
export function declaredLayers(config, side) {
  if (side) return config[`${side}_layers`];
  return config.num_hidden_layers ?? config.n_layer ?? config.n_layers ?? config.num_layers;
}

// Layer cases of ../shared/golden as arguments of the JS API, token slicing
// for incremental decoding, and a float64 reference of the layers (for the
// variants the golden folder has no case of: pre-LN, GELU).

// The golden prefix of one attention's weights -> { wQ, ..., bO }.
function attention(t, prefix = '') {
  const w = (k) => t[`${prefix}${k}`].data;
  return {
    wQ: w('w_q'), wK: w('w_k'), wV: w('w_v'), wO: w('w_o'),
    bQ: w('b_q'), bK: w('b_k'), bV: w('b_v'), bO: w('b_o'),
  };
}

function ffn(t) {
  return { w1: t.ffn_w1.data, b1: t.ffn_b1.data, w2: t.ffn_w2.data, b2: t.ffn_b2.data };
}

function norm(t, i) {
  return { gamma: t[`ln${i}_gamma`].data, beta: t[`ln${i}_beta`].data };
}

function layerConfig(c) {
  return {
    dModel: c.config.d_model, numHeads: c.config.num_heads, ffnDim: c.config.ffn_dim,
    normFirst: c.config.norm === 'pre', activation: c.config.activation,
    eps: c.config.layer_norm_eps,
  };
}

export function encoderArguments(c) {
  const t = c.tensors;
  return {
    config: layerConfig(c),
    weights: { attention: attention(t), ffn: ffn(t), norm1: norm(t, 1), norm2: norm(t, 2) },
    input: t.input,
    output: t.output,
  };
}

export function decoderArguments(c) {
  const t = c.tensors;
  return {
    config: layerConfig(c),
    weights: {
      selfAttention: attention(t, 'self_'), crossAttention: attention(t, 'cross_'),
      ffn: ffn(t), norm1: norm(t, 1), norm2: norm(t, 2), norm3: norm(t, 3),
    },
    input: t.input,
    memory: t.memory,
    output: t.output,
  };
}

// Tokens [start, end) of a [B, T, D] tensor, as a new [B, end - start, D] tensor.
export function sliceTokens(t, start, end) {
  const [b, tokens, d] = t.shape;
  const n = end - start;
  const data = new Float32Array(b * n * d);
  for (let i = 0; i < b; i++) {
    data.set(t.data.subarray((i * tokens + start) * d, (i * tokens + end) * d), i * n * d);
  }
  return { data, shape: [b, n, d] };
}

// [B, n_i, D] tensors joined along the tokens.
export function concatTokens(parts) {
  const [b, , d] = parts[0].shape;
  const total = parts.reduce((s, p) => s + p.shape[1], 0);
  const data = new Float32Array(b * total * d);
  let at = 0;
  for (const p of parts) {
    const n = p.shape[1];
    for (let i = 0; i < b; i++) {
      data.set(p.data.subarray(i * n * d, (i + 1) * n * d), (i * total + at) * d);
    }
    at += n;
  }
  return { data, shape: [b, total, d] };
}

// Deterministic pseudo-random floats in [-scale, scale) (xorshift32).
export function randomFloats(n, seed, scale = 0.5) {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    out[i] = (s / 4294967296 * 2 - 1) * scale;
  }
  return out;
}

// Random weights of a layer of width d with FFN width f.
export function randomLayerWeights(d, f, seed, { decoder = false } = {}) {
  let k = seed;
  const r = (n, scale = 0.3) => randomFloats(n, ++k * 7919, scale);
  const att = () => ({
    wQ: r(d * d), wK: r(d * d), wV: r(d * d), wO: r(d * d),
    bQ: r(d, 0.1), bK: r(d, 0.1), bV: r(d, 0.1), bO: r(d, 0.1),
  });
  const nrm = () => ({ gamma: Float32Array.from(r(d), (v) => 1 + v), beta: r(d, 0.1) });
  const f1 = { w1: r(d * f), b1: r(f, 0.1), w2: r(f * d), b2: r(d, 0.1) };
  return decoder
    ? { selfAttention: att(), crossAttention: att(), ffn: f1, norm1: nrm(), norm2: nrm(), norm3: nrm() }
    : { attention: att(), ffn: f1, norm1: nrm(), norm2: nrm() };
}

// ---------------------------------------------------------------------------
// float64 reference (rows of plain arrays), written from the definitions
// ---------------------------------------------------------------------------

// x [rows, in] (Float64Array), w [in, out] (X @ W), b [out] -> [rows, out]
function linear(x, rows, w, b, inDim, outDim) {
  const y = new Float64Array(rows * outDim);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outDim; o++) {
      let s = b ? b[o] : 0;
      for (let i = 0; i < inDim; i++) s += x[r * inDim + i] * w[i * outDim + o];
      y[r * outDim + o] = s;
    }
  }
  return y;
}

// Self- or cross-attention of one sequence: q rows tq, kv rows tk.
function attend(xq, tq, xkv, tk, w, d, heads, causal) {
  const dk = d / heads;
  const q = linear(xq, tq, w.wQ, w.bQ, d, d);
  const k = linear(xkv, tk, w.wK, w.bK, d, d);
  const v = linear(xkv, tk, w.wV, w.bV, d, d);
  const z = new Float64Array(tq * d);
  const scale = 1 / Math.sqrt(dk);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < tq; i++) {
      const last = causal ? i + (tk - tq) : tk - 1;
      const s = [];
      let max = -Infinity;
      for (let j = 0; j <= last; j++) {
        let dot = 0;
        for (let e = 0; e < dk; e++) dot += q[i * d + h * dk + e] * k[j * d + h * dk + e];
        s.push(dot * scale);
        max = Math.max(max, dot * scale);
      }
      const p = s.map((x) => Math.exp(x - max));
      const sum = p.reduce((a, b) => a + b, 0);
      for (let j = 0; j <= last; j++) {
        for (let e = 0; e < dk; e++) z[i * d + h * dk + e] += p[j] / sum * v[j * d + h * dk + e];
      }
    }
  }
  return linear(z, tq, w.wO, w.bO, d, d);
}

function layerNorm(x, rows, d, { gamma, beta }, eps) {
  const y = new Float64Array(rows * d);
  for (let r = 0; r < rows; r++) {
    let mean = 0;
    for (let i = 0; i < d; i++) mean += x[r * d + i];
    mean /= d;
    let variance = 0;
    for (let i = 0; i < d; i++) variance += (x[r * d + i] - mean) ** 2;
    variance /= d;
    const inv = 1 / Math.sqrt(variance + eps);
    for (let i = 0; i < d; i++) y[r * d + i] = (x[r * d + i] - mean) * inv * gamma[i] + beta[i];
  }
  return y;
}

// erf to ~1e-16 via its Maclaurin series / continued fraction (|x| small
// enough here that the series converges quickly; large |x| saturates).
function erf(x) {
  if (Math.abs(x) > 6) return Math.sign(x);
  let term = x;
  let sum = x;
  for (let n = 1; n < 200; n++) {
    term *= -x * x / n;
    const add = term / (2 * n + 1);
    sum += add;
    if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
  }
  return 2 / Math.sqrt(Math.PI) * sum;
}

const ACTIVATIONS = {
  relu: (v) => Math.max(0, v),
  gelu: (v) => 0.5 * v * (1 + erf(v / Math.SQRT2)),
  gelu_tanh: (v) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3))),
};
ACTIVATIONS.gelu_erf = ACTIVATIONS.gelu;

export function feedForward(x, rows, d, f, w, activation) {
  const h = linear(x, rows, w.w1, w.b1, d, f).map(ACTIVATIONS[activation]);
  return linear(h, rows, w.w2, w.b2, f, d);
}

// x = norm(x + f(x)) (post-LN) or x + f(norm(x)) (pre-LN), in place.
function residual(x, rows, d, normFirst, normWeights, eps, f) {
  if (normFirst) {
    const y = f(layerNorm(x, rows, d, normWeights, eps));
    for (let i = 0; i < x.length; i++) x[i] += y[i];
    return x;
  }
  const y = f(x);
  for (let i = 0; i < x.length; i++) x[i] += y[i];
  return layerNorm(x, rows, d, normWeights, eps);
}

function perSequence(t, b) {
  const [, tokens, d] = t.shape;
  return Float64Array.from(t.data.subarray(b * tokens * d, (b + 1) * tokens * d));
}

// A layer config with defaults as the package fills them in.
function resolved(config) {
  return { normFirst: false, activation: 'relu', eps: 1e-5, ...config };
}

export function referenceEncoder(config, w, x, { causal = false } = {}) {
  const { dModel: d, numHeads: heads, ffnDim: f, normFirst, activation, eps } = resolved(config);
  const [batch, t] = x.shape;
  const out = new Float32Array(x.data.length);
  for (let b = 0; b < batch; b++) {
    let h = perSequence(x, b);
    h = residual(h, t, d, normFirst, w.norm1, eps, (y) => attend(y, t, y, t, w.attention, d, heads, causal));
    h = residual(h, t, d, normFirst, w.norm2, eps, (y) => feedForward(y, t, d, f, w.ffn, activation));
    out.set(h, b * t * d);
  }
  return out;
}

export function referenceDecoder(config, w, x, memory, { causal = true } = {}) {
  const { dModel: d, numHeads: heads, ffnDim: f, normFirst, activation, eps } = resolved(config);
  const [batch, t] = x.shape;
  const s = memory.shape[1];
  const out = new Float32Array(x.data.length);
  for (let b = 0; b < batch; b++) {
    const m = perSequence(memory, b);
    let h = perSequence(x, b);
    h = residual(h, t, d, normFirst, w.norm1, eps,
      (y) => attend(y, t, y, t, w.selfAttention, d, heads, causal));
    h = residual(h, t, d, normFirst, w.norm2, eps,
      (y) => attend(y, t, m, s, w.crossAttention, d, heads, false));
    h = residual(h, t, d, normFirst, w.norm3, eps, (y) => feedForward(y, t, d, f, w.ffn, activation));
    out.set(h, b * t * d);
  }
  return out;
}

export function referenceLayerNorm(x, gamma, beta, eps = 1e-5) {
  const d = x.shape[x.shape.length - 1];
  const rows = x.data.length / d;
  return Float32Array.from(layerNorm(Float64Array.from(x.data), rows, d, { gamma, beta }, eps));
}

// y [rows, n] = x [rows, k] w [k, n] in float64.
export const matmul = (x, rows, w, k, n) => linear(x, rows, w, undefined, k, n);

// RMSNorm of `rows` rows of d features in float64: x / rms(x) * gamma.
export function referenceRmsNorm(x, rows, d, gamma, eps) {
  const y = new Float64Array(x.length);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let i = 0; i < d; i++) s += x[r * d + i] ** 2;
    const inv = 1 / Math.sqrt(s / d + eps);
    for (let i = 0; i < d; i++) y[r * d + i] = x[r * d + i] * inv * gamma[i];
  }
  return y;
}

// Calls that must not compile, each for a misspelled forward option, which
// the message must name (declarations.test.mjs compiles this file with
// TypeScript 5.9 and 7 and reads their messages; @ts-expect-error could not
// tell which error a line gets).
import { createAttentionModule, createAttentionPool, type Tensor } from '../../web/index.js';

const sa = await createAttentionModule();
const mha = new sa.MultiHeadAttention({ dModel: 8, numHeads: 2 });
const x: Tensor = { data: new Float32Array(16), shape: [2, 8] };
const pooled = await (await createAttentionPool({ workers: 2 })).MultiHeadAttention({ dModel: 8, numHeads: 2 });

export const wrong = [
  mha.forward(x, undefined, undefined, { returnAttnWeight: true }),
  mha.forward(x, x, x, { causall: true }),
  pooled.forward(x, x, undefined, { returnScore: true }),
];

// The scales pool results are compared at: 1e-6 of them is float32 rounding
// of a sum computed in another order.

export const maxAbs = (data) => data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);

// The scale of an attention output: what float32 sums round against, the
// magnitudes added up at each position (the heads' contributions and the
// output itself, which bounds b_O with them), when the per-head outputs are
// known.
export function outputScale({ output, perHeadOutput }) {
  if (perHeadOutput === undefined) return maxAbs(output.data);
  const width = output.shape.at(-1);
  const tokens = output.shape.at(-2);
  const heads = perHeadOutput.shape.at(-3);
  let scale = 0;
  for (let i = 0; i < output.data.length; ++i) {
    const [row, col] = [Math.floor(i / width), i % width];
    const [b, t] = [Math.floor(row / tokens), row % tokens];
    let sum = Math.abs(output.data[i]);
    for (let h = 0; h < heads; ++h) {
      sum += Math.abs(perHeadOutput.data[((b * heads + h) * tokens + t) * width + col]);
    }
    scale = Math.max(scale, sum);
  }
  return scale;
}

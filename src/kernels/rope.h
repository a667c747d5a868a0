// Rotary position embedding (RoPE) policy: the arguments of the kernel in
// rope-inl.h and the layout of its angle table.
#pragma once

#include <cstddef>

namespace simd_attention {

// Rotates the first rotary_dim features of every head of `tokens` rows in
// place; features past rotary_dim stay. The backward's kernel turns by the
// negative angles instead: the rotation's transpose, which carries a
// gradient of the rotated rows back to the rows before. Row t turns by the angles of table
// row t (table + t * table_ld), so the caller picks the positions.
//
// A pair (x0, x1) turns by angle a: (x0 cos a - x1 sin a, x0 sin a + x1 cos a).
// The table row, computed once per position in double and rounded to float,
// is laid out so that the kernel only multiplies and adds whole vectors:
//  - half style (GPT-NeoX, Llama: pair i is features i and i + r/2):
//    [cos a_0 .. cos a_{r/2-1} | sin a_0 .. sin a_{r/2-1}], r floats. Both
//    halves of a head load as vectors; no lane moves.
//  - interleaved (GPT-J: pair i is features 2i and 2i + 1):
//    [cos a_0, cos a_0, cos a_1, cos a_1 .. | -sin a_0, sin a_0, -sin a_1,
//    sin a_1 ..], 2r floats: x' = x * C + SwapPairs(x) * S, one lane swap
//    per vector.
struct RopeArgs {
  float* x;  // row t at x + t * ld
  size_t ld;
  size_t tokens;
  size_t heads;        // heads per row, head h at h * head_stride
  size_t head_stride;  // padded head width (>= rotary_dim)
  size_t rotary_dim;   // r, even
  bool interleaved;
  const float* table;  // row t: the angles of row t's position (layout above)
  size_t table_ld;
};

// The kernel's scalar parts, the same for every vector layer and so compiled
// once (rope_scalar_parts.cc).

// Table rows of positions first, first + 1, ... (`positions` rows of
// RopeTableRow floats): pair i of position p turns by p * base^(-2i / r).
void FillRopeAngles(double base, size_t rotary_dim, bool interleaved, size_t first,
                    size_t positions, float* table);
// Pairs from `begin` on of one head, one at a time (back: by the negative
// angles): the kernels' tail past
// their whole vectors (begin counts features of the first half in the half
// style, features interleaved). `angles`: the head's table row.
void RotateTail(const RopeArgs& a, float* head, const float* angles, size_t begin, bool back);

// Floats of one table row.
constexpr size_t RopeTableRow(size_t rotary_dim, bool interleaved) {
  return interleaved ? 2 * rotary_dim : rotary_dim;
}

}  // namespace simd_attention

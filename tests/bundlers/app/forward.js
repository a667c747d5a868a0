// One forward of a golden case with the package, on the page or in a worker.
import { createAttentionModule } from 'simd-attention';
import { forwardWith } from './forward-with.js';

export const forward = (golden) => forwardWith(createAttentionModule, golden);

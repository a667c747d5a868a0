// A page of the attention entry: the test calls forwardOnPage(case).
import { createAttentionModule } from 'simd-attention/attention';
import { forwardWith } from './forward-with.js';

window.forwardOnPage = (golden) => forwardWith(createAttentionModule, golden);
document.body.dataset.ready = 'yes';

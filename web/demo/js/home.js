// Home: the nav and what this browser supports.
import { attentionModule, initPage, el, showError, wasmSimdSupported } from './common.js';

async function main() {
  initPage();
  const env = document.getElementById('env');
  const simd = wasmSimdSupported();
  const module = await attentionModule();
  env.replaceChildren(
    el('span', { class: `pill ${simd ? 'ok' : 'bad'}` }, simd ? 'WebAssembly SIMD: yes' : 'WebAssembly SIMD: no'),
    el('span', { class: `pill ${globalThis.crossOriginIsolated ? 'ok' : ''}` },
      globalThis.crossOriginIsolated ? 'cross-origin isolated' : 'not cross-origin isolated'),
    el('span', {}, `loaded the ${module.simd ? 'SIMD' : 'non-SIMD'} build, backends ${module.backends.join(', ')}, kernels ${module.kernels}`));
  document.body.dataset.state = 'ready';
}

main().catch((e) => showError(e));

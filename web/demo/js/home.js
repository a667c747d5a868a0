// Home: the nav and what this browser supports.
import {
  attentionModule, initPage, el, showError, wasmSimdSupported, wasmRelaxedSimdSupported, buildName, showBuild,
} from './common.js';

async function main() {
  initPage();
  const env = document.getElementById('env');
  const simd = wasmSimdSupported();
  const relaxed = wasmRelaxedSimdSupported();
  const module = await attentionModule();
  showBuild(module);
  env.replaceChildren(
    el('span', { class: `pill ${simd ? 'ok' : 'bad'}` }, simd ? 'WebAssembly SIMD: yes' : 'WebAssembly SIMD: no'),
    el('span', { class: `pill ${relaxed ? 'ok' : ''}` }, relaxed ? 'relaxed SIMD: yes' : 'relaxed SIMD: no'),
    el('span', { class: `pill ${globalThis.crossOriginIsolated ? 'ok' : ''}` },
      globalThis.crossOriginIsolated ? 'cross-origin isolated' : 'not cross-origin isolated'),
    el('span', {}, `loaded the ${buildName(module)} build, backends ${module.backends.join(', ')}, kernels ${module.kernels}`));
  document.body.dataset.state = 'ready';
}

main().catch((e) => showError(e));

// Debian's chromium driven by playwright-core (never a downloaded browser):
// opens an app's page, runs a forward on it and in its worker, and notes which
// files of the package's dist/ the page and its workers fetched (distFileOf).
import { launchChromium } from '../../browser/launch.mjs';
import { distFileOf } from './apps.mjs';

export const launch = launchChromium;

// Opens `url` and waits for main.js; resolves to { page, problems, fetched }:
// console errors, page errors and failed requests, and the dist/ files
// that came over the network.
export async function openApp(browser, url, distFiles) {
  const page = await browser.newPage();
  const problems = [];
  const fetched = new Set();
  const reads = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`failed: ${r.url()}`));
  page.on('response', (r) => {
    if (!/\.(m?js|wasm)(\?|$)/.test(r.url()) || r.status() !== 200) return;
    reads.push(r.body().then((body) => {
      const name = distFileOf(body, distFiles);
      if (name) fetched.add(name);
    }, () => {}));
  });
  await page.goto(url);
  await page.waitForFunction(() => typeof window.forwardOnPage === 'function');
  return { page, problems, fetched: async () => { await Promise.all(reads); return [...fetched].sort(); } };
}

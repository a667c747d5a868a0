// How the browser tests start Debian's chromium (playwright-core drives it
// and never downloads a browser; SA_CHROMIUM overrides the binary), the demo
// servers they run against, and how they open a demo page.
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';
import { startServer } from '../../web/demo/server.mjs';

const CHROMIUM = process.env.SA_CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-quic'];

export const launchChromium = () => chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });

// Demo servers on free ports and Chromium for the tests of one file, started
// before them and closed after: session[name] is the server of
// servers[name] (true: with COOP/COEP, false: without, a page that is not
// cross-origin isolated), session.browser the browser.
function browserSession(servers) {
  const session = { browser: null };
  before(async () => {
    for (const [name, isolated] of Object.entries(servers)) {
      session[name] = await startServer({ port: 0, isolated });
    }
    session.browser = await launchChromium();
  });
  after(async () => {
    await session.browser?.close();
    for (const name of Object.keys(servers)) await session[name]?.close();
  });
  return session;
}

// One demo server, session.server; `isolated: false` serves without
// COOP/COEP.
export const demoSession = ({ isolated = true } = {}) => browserSession({ server: isolated });

// Both: session.isolated with COOP/COEP, session.notIsolated without.
export const isolationSession = () => browserSession({ isolated: true, notIsolated: false });

// Why a page without COOP/COEP has no threads (module.threadsUnavailable).
export const NOT_ISOLATED_REASON = 'the page is not cross-origin isolated: serve it with COOP: ' +
  'same-origin and COEP: require-corp (Cross-Origin-Opener-Policy and ' +
  'Cross-Origin-Embedder-Policy headers), which SharedArrayBuffer needs';

export const DESKTOP = { width: 1280, height: 800 };
const PAGE_TIMEOUT = 120_000;

// Opens web/demo/`pagePath` of `server` in a new context of `browser` (its
// own viewport) and waits until the page says one of `until` or 'error'
// (body[data-state]). Every console error, page error, failed request and
// HTTP error goes to `problems`. Returns { page, context, problems, state,
// response }.
export async function openDemoPage(browser, server, pagePath,
  { viewport = DESKTOP, until = ['ready'] } = {}) {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`); });
  const response = await page.goto(new URL(`web/demo/${pagePath}`, server.url).href);
  await page.waitForFunction((states) => states.includes(document.body.dataset.state) ||
    document.body.dataset.state === 'error', until, { timeout: PAGE_TIMEOUT });
  const state = await page.evaluate(() => document.body.dataset.state);
  return { page, context, problems, state, response };
}

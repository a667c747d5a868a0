// How the browser tests start Debian's chromium: playwright-core drives it
// and never downloads a browser. SA_CHROMIUM overrides the binary.
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';
import { startServer } from '../../web/demo/server.mjs';

const CHROMIUM = process.env.SA_CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-quic'];

export const launchChromium = () => chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });

// The demo server on a free port and Chromium for the tests of one file,
// started before them and closed after; `isolated: false` serves without
// COOP/COEP (a page that is not cross-origin isolated).
export function demoSession({ isolated = true } = {}) {
  const session = { server: null, browser: null };
  before(async () => {
    session.server = await startServer({ port: 0, isolated });
    session.browser = await launchChromium();
  });
  after(async () => {
    await session.browser?.close();
    await session.server?.close();
  });
  return session;
}

// How the browser tests start Debian's chromium: playwright-core drives it
// and never downloads a browser. SA_CHROMIUM overrides the binary.
import { chromium } from 'playwright-core';

const CHROMIUM = process.env.SA_CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export const launchChromium = () => chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });

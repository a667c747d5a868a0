// Browser test of the training page (web/demo/training.html): the copy task
// to 99% and the induction task to 90% accuracy (the page's running accuracy
// on fresh batches, read from the DOM) within 60 s each in Chromium, the
// heads drawn and labelled, nothing logged as an error, and the page at
// 390 px. Screenshots go to build/screenshots/training-*.png.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../js/support/golden.mjs';
import { demoSession, openDemoPage } from './launch.mjs';

const session = demoSession();
const SHOTS = path.join(repoRoot, 'build', 'screenshots');
const PHONE = { width: 390, height: 844 };
const GOAL_MS = 60_000;
// After induction is learned, the time its heads' patterns get to sharpen
// past the labels' threshold.
const LABELS_MS = 30_000;

before(() => fs.mkdirSync(SHOTS, { recursive: true }));

const shoot = (page, name) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
const body = (page) => page.evaluate(() => ({ ...document.body.dataset }));

// Picks `task` (the page sets up a new model, not training) and waits for its first figures.
async function choose(page, task) {
  await page.selectOption('#task', task);
  await page.waitForFunction((t) => document.body.dataset.task === t && document.body.dataset.steps === '0' &&
    document.querySelectorAll('.head-card canvas').length > 0, task);
}

// Starts training and waits until the page's accuracy reaches `goal`; the wall time it took.
async function train(page, goal) {
  const start = Date.now();
  await page.click('#start');
  await page.waitForFunction((g) => Number(document.body.dataset.accuracy) >= g, goal, { timeout: GOAL_MS + 5_000 });
  return Date.now() - start;
}

async function pause(page) {
  await page.click('#start');
  await page.waitForFunction(() => document.body.dataset.running === 'false');
}

// Every head's heatmap has cells of more than one colour: drawn, not blank.
async function assertHeatmapsDrawn(page, heads, what) {
  const colours = await page.$$eval('.head-card canvas', (canvases) => canvases.map((c) => {
    const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    const seen = new Set();
    for (let i = 0; i < data.length; i += 4) seen.add(`${data[i]},${data[i + 1]},${data[i + 2]}`);
    return seen.size;
  }));
  assert.equal(colours.length, heads, `${what}: one heatmap per head`);
  for (const n of colours) assert.ok(n > 2, `${what}: a heatmap of ${n} colours`);
}

test('training page: copy to 99% and induction to 90% within 60 s each, heads labelled', { timeout: 300_000 }, async (t) => {
  const p = await openDemoPage(session.browser, session.server, 'training.html');
  assert.equal(p.state, 'ready');
  const { page } = p;
  const badge = await page.$eval('header .build-badge', (b) => ({ text: b.textContent, build: b.dataset.build }));
  assert.deepEqual(badge, { text: 'training build', build: 'training' });

  await choose(page, 'copy');
  assert.equal((await body(page)).accuracy, '');
  await shoot(page, 'training-copy-start');
  const copyMs = await train(page, 0.99);
  const copy = await body(page);
  t.diagnostic(`copy: ${copy.accuracy} after ${copy.steps} steps, ${(copyMs / 1000).toFixed(1)} s`);
  assert.ok(copyMs <= GOAL_MS, `copy reached 99% in ${copyMs} ms`);
  await pause(page);
  await assertHeatmapsDrawn(page, 2, 'copy');
  assert.match(await page.locator('#announce').innerText(), /^Reached 99% accuracy after [\d,]+ steps/);
  await shoot(page, 'training-copy-end');

  await choose(page, 'induction');
  await shoot(page, 'training-induction-start');
  const inductionMs = await train(page, 0.9);
  const induction = await body(page);
  t.diagnostic(`induction: ${induction.accuracy} after ${induction.steps} steps, ${(inductionMs / 1000).toFixed(1)} s`);
  assert.ok(inductionMs <= GOAL_MS, `induction reached 90% in ${inductionMs} ms`);
  // Layer 1 holds a previous-token head and layer 2 an induction head.
  const labelled = () => {
    const roles = (layer) => [...document.querySelectorAll(`.head-card[data-layer="${layer}"]`)].map((c) => c.dataset.role);
    return roles(0).includes('previous') && roles(1).includes('induction');
  };
  await page.waitForFunction(labelled, undefined, { timeout: LABELS_MS });
  await pause(page);
  const heads = await page.$$eval('.head-card', (cards) => cards.map((c) => ({
    layer: c.dataset.layer, role: c.dataset.role, label: c.querySelector('.pill').textContent,
  })));
  t.diagnostic(`induction heads: ${JSON.stringify(heads)} at step ${(await body(page)).steps}`);
  assert.ok(heads.some((h) => h.layer === '0' && h.label === 'previous-token head'));
  assert.ok(heads.some((h) => h.layer === '1' && h.label === 'induction head'));
  await assertHeatmapsDrawn(page, 4, 'induction');
  await shoot(page, 'training-induction-end');
  assert.deepEqual(p.problems, [], 'console or page errors');
  await p.context.close();
});

test('training page at 390 px: trains, does not scroll sideways', { timeout: 120_000 }, async () => {
  const p = await openDemoPage(session.browser, session.server, 'training.html?task=induction', { viewport: PHONE });
  assert.equal(p.state, 'ready');
  const { page } = p;
  assert.equal((await body(page)).task, 'induction');
  await page.click('#start');
  await page.waitForFunction(() => Number(document.body.dataset.steps) >= 200);
  await pause(page);
  const { scroll, client } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
  }));
  assert.ok(scroll <= client, `page is ${scroll}px wide on a ${client}px screen`);
  await assertHeatmapsDrawn(page, 4, 'induction at 390 px');
  await shoot(page, 'training-induction-390');
  assert.deepEqual(p.problems, [], 'console or page errors');
  await p.context.close();
});

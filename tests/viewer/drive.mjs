// Drives Debian's Chromium (headless, fresh profile, no network but the
// daemon's address) through a list of steps for the viewer's browser tests
// and the screenshots in docs/. Usage:
//   node drive.mjs STEPS.json
// STEPS.json: {"origin": "http://127.0.0.1:PORT", "width": W, "height": H,
//              "steps": [{"goto": PATH}, {"waitApplied": N}, {"sleep": MS},
//                        {"shot": FILE, "canvas": true}, {"click": SELECTOR},
//                        {"touch": FILE}, {"waitFile": FILE}, {"waitAppliedFromFile": FILE},
//                        {"readout": true}, {"text": SELECTOR}, {"dataset": true}]}
// Prints one JSON object: every request the page made, the readout, texts,
// console errors, and the page's data attributes (body.dataset: what it
// drew) at each "dataset" step.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const plan = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const origin = plan.origin;
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'contactd-chromium-'));
const out = { requests: [], blocked: [], readout: null, texts: {}, console: [], applied: null, datasets: [] };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: plan.width || 1000, height: plan.height || 640 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'],
});
try {
  // The network is blocked except for the daemon's own address.
  await ctx.route('**/*', (route) => {
    const u = route.request().url();
    if (u.startsWith(origin + '/') || u.startsWith('data:')) return route.continue();
    out.blocked.push(u);
    return route.abort();
  });
  const page = ctx.pages()[0] || (await ctx.newPage());
  page.on('request', (r) => out.requests.push(r.url()));
  page.on('console', (m) => { if (m.type() === 'error') out.console.push(m.text()); });
  page.on('pageerror', (e) => out.console.push(String(e)));
  const applied = () => page.evaluate(() => Number(document.body.dataset.applied || 0));
  const waitApplied = async (n, ms = 20000) => {
    const t0 = Date.now();
    while (Date.now() - t0 < ms) {
      if ((await applied()) >= n) return;
      await sleep(25);
    }
    throw new Error(`the page did not draw version ${n} within ${ms} ms (it has ${await applied()})`);
  };
  for (const s of plan.steps) {
    if (s.goto !== undefined) await page.goto(origin + s.goto, { waitUntil: 'load' });
    else if (s.waitApplied !== undefined) await waitApplied(s.waitApplied);
    else if (s.sleep !== undefined) await sleep(s.sleep);
    else if (s.click !== undefined) await page.click(s.click);
    else if (s.shot !== undefined) {
      // two animation frames: what was applied is on the canvas
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      if (s.canvas) await page.locator('#canvas').screenshot({ path: s.shot });
      else await page.screenshot({ path: s.shot });
    } else if (s.touch !== undefined) {
      fs.writeFileSync(s.touch, '');
    } else if (s.waitFile !== undefined) {
      const t0 = Date.now();
      while (!fs.existsSync(s.waitFile)) {
        if (Date.now() - t0 > 60000) throw new Error(`no ${s.waitFile} within 60 s`);
        await sleep(25);
      }
    } else if (s.waitAppliedFromFile !== undefined) {
      await waitApplied(Number(fs.readFileSync(s.waitAppliedFromFile, 'utf8')));
    } else if (s.readout) {
      out.readout = await page.$$eval('#pairs tbody tr', (rows) => rows.map((tr) => ({
        a: tr.dataset.a, b: tr.dataset.b,
        force: tr.querySelector('.force').textContent, area: tr.querySelector('.area').textContent,
        faces: tr.querySelector('.faces').textContent, energy: tr.querySelector('.energy').textContent,
      })));
    } else if (s.dataset) {
      out.datasets.push(await page.evaluate(() => ({ ...document.body.dataset })));
    } else if (s.text !== undefined) {
      out.texts[s.text] = await page.$eval(s.text, (e) => e.textContent);
    }
  }
  out.applied = await applied();
} finally {
  await ctx.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out) + '\n');

// The invitation page's edges in a real browser, started by internal/e2e's
// TestPersonPageEdges: a link whose secret is wrong, the page opened without
// its link, a wrong proof code, an email for revision 1 read once revision 3
// is current, and what the page says settled the outcome. No console error
// may appear beyond Chromium's report of the API refusals provoked here,
// and /favicon.ico is answered.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { channel, Checks, DESKTOP } from './lib.mjs';

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-quic'];

const io = channel();
const cfg = await io.next(); // { origin, chromium, outDir, person: { id, link, proof } }
const checks = new Checks();
const problems = [];

function provokedRefusal(m) {
  if (!m.text().startsWith('Failed to load resource')) return false;
  try { return new URL(m.location().url).pathname.startsWith('/api/'); } catch { return false; }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'consensus-edges-'));
const ctx = await chromium.launchPersistentContext(dir, { executablePath: cfg.chromium, headless: true, args: FLAGS, viewport: DESKTOP });
ctx.on('console', m => { if ((m.type() === 'error' || m.type() === 'warning') && !provokedRefusal(m)) problems.push(m.text() + ' (' + m.location().url + ')'); });
ctx.on('weberror', e => problems.push(e.error().message));
ctx.on('response', r => {
  const u = new URL(r.url());
  if (r.status() >= 400 && !u.pathname.startsWith('/api/')) problems.push(r.status() + ' ' + u.pathname);
});
const text = (page, sel) => page.locator(sel).innerText();

try {
  // A link whose secret is wrong: the error, and nothing still "opening".
  const bad = await ctx.newPage();
  await bad.goto(cfg.origin + '/invite/' + cfg.person.id + '#secret=csi_' + 'A'.repeat(43));
  await bad.locator('#heading', { hasText: 'cannot be opened' }).waitFor();
  checks.ok(!(await text(bad, 'body')).includes('Opening your invitation'), 'a wrong secret\'s page no longer says it is opening the invitation');
  await bad.close();

  // The page without its link: the heading once.
  const nolink = await ctx.newPage();
  await nolink.goto(cfg.origin + '/invite/' + cfg.person.id);
  await nolink.locator('#nolink').waitFor();
  const body = await text(nolink, 'body');
  checks.ok(body.split('Open the link from your invitation email').length - 1 === 1, 'the no-link page says its heading once');
  const icon = await nolink.request.get(cfg.origin + '/favicon.ico');
  checks.ok(icon.status() === 200 && icon.headers()['content-type'] === 'image/x-icon', '/favicon.ico is served');
  await nolink.close();

  // The email of revision 1, read with revision 3 current.
  const page = await ctx.newPage();
  await page.goto(cfg.person.link);
  await page.locator('#claim').waitFor();
  const changed = await page.locator('#a-changed').isVisible() ? await text(page, '#a-changed') : '';
  checks.ok(changed.includes('changed since it was first sent') && changed.includes('revision 3'), 'the page says the agreement changed since the email: ' + changed);
  checks.ok(/Revision 2[^\n]*title, objective or rules changed/.test(changed) && /Revision 3[^\n]*stayed the same/.test(changed),
    'the page says what each later revision changed');
  checks.ok(!(await page.locator('#a-locked').isVisible()), 'the page no longer calls the text unchanged');

  // A wrong proof code, explained at its field.
  await page.fill('#proof', 'this-is-not-the-proof-code');
  await page.click('#claim-submit');
  await page.locator('#proof-error', { hasText: 'does not match' }).waitFor();
  const described = (await page.getAttribute('#proof', 'aria-describedby') || '').split(/\s+/);
  checks.ok(described.includes('proof-error') && !(await page.locator('#alert').isVisible()), 'the proof error is at the field and the field names it');
  await page.screenshot({ path: path.join(cfg.outDir, 'edges-wrong-proof.png'), fullPage: true });

  // Claim, agree, and read what settled it.
  await page.fill('#proof', cfg.person.proof);
  await page.click('#claim-submit');
  await page.locator('[data-outcome="pending"]').waitFor();
  await page.click('button.agree');
  await page.locator('#confirm').waitFor();
  await page.click('#confirm-yes');
  await page.locator('[data-outcome="reached"]').waitFor();
  const settled = await text(page, '#blocking');
  checks.ok(await text(page, '#blocking-title') === 'What settled it' && !settled.includes('Nothing') && settled.includes('Pia agreed'),
    'what settled it names the deciding agreement: ' + settled);
  await page.screenshot({ path: path.join(cfg.outDir, 'edges-settled.png'), fullPage: true });
} catch (err) {
  checks.failures.push(String(err && err.stack || err));
}
checks.ok(problems.length === 0, 'no console error, warning or failed page load: ' + problems.join(' | '));
await ctx.close();
fs.rmSync(dir, { recursive: true, force: true });
io.result({ failures: checks.failures });
io.close();
process.exit(checks.failures.length ? 1 : 0);

// The people's flow in a real browser (Debian's chromium through
// playwright-core), started by internal/e2e's TestPeopleInBrowser. Three
// people open invitation links from real emails; one claims, comments,
// agrees and downloads CONSENSUS.md while a second person and an agent
// decide through their own channels; a fifth room decides by a quorum of 2
// of 3. It also shows a wrong proof code, a
// stale revision, a closed tab, a revoked participant and an expired
// invitation. Every step is screenshot at desktop and phone width and
// checked with axe-core.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { chromium } from 'playwright-core';
import { channel, Checks, screenshots, axe, focusReaches, DESKTOP } from './lib.mjs';

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-quic'];

const io = channel();
const cfg = await io.next(); // { origin, chromium, outDir, one, two, three, four, five: { link, proof } }
const checks = new Checks();
const requested = [];
const consoleProblems = [];

/** A browser of its own with a fresh profile directory: one per person. */
async function browser(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'consensus-' + name + '-'));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: cfg.chromium, headless: true, args: FLAGS, viewport: DESKTOP, acceptDownloads: true, timezoneId: 'Europe/Berlin',
  });
  ctx.on('request', r => requested.push(r.url()));
  // Chromium reports every answer of 400 and above as a console error
  // ("Failed to load resource"); the refusals this test provokes are those.
  ctx.on('console', m => {
    if ((m.type() === 'error' || m.type() === 'warning') && !provokedRefusal(m)) consoleProblems.push(name + ': ' + m.text());
  });
  ctx.on('weberror', e => consoleProblems.push(name + ': ' + e.error().message));
  const b = { ctx, close: async () => { await ctx.close(); fs.rmSync(dir, { recursive: true, force: true }); } };
  open.push(b);
  return b;
}

/**
 * Whether a console message is Chromium's report of an API refusal this
 * test provokes ("Failed to load resource" for a 4xx of /api/…). Any other
 * failed load, such as a missing /favicon.ico, is a console error.
 */
function provokedRefusal(m) {
  if (!m.text().startsWith('Failed to load resource')) return false;
  try { return new URL(m.location().url).pathname.startsWith('/api/'); } catch { return false; }
}

/** The wrong proof code's explanation sits at the field, not in the page's alert. */
async function wrongProofAtField(page) {
  const described = (await page.getAttribute('#proof', 'aria-describedby') || '').split(/\s+/);
  return described.includes('proof-error') && await page.locator('#proof-error').isVisible() && !(await page.locator('#alert').isVisible());
}

const text = (page, sel) => page.locator(sel).innerText();
const shot = (page, name) => screenshots(page, cfg.outDir, name, checks);

async function claim(page, link, proof) {
  await page.goto(link);
  await page.locator('#claim').waitFor();
  await page.fill('#proof', '  ' + proof + '\n'); // as pasted, with stray whitespace
  await page.click('#claim-submit');
  await page.locator('[data-outcome]').waitFor();
}

async function decide(page, action, viaKeyboard) {
  if (viaKeyboard) {
    await page.focus('button.' + action);
    await page.keyboard.press('Enter');
  } else {
    await page.click('button.' + action);
  }
  await page.locator('#confirm').waitFor();
}

const open = [];
let token = '';
let sum = '';

/** On a failure, shows what each open page showed and saves it. */
async function explain(err) {
  console.log('FAIL: ' + (err && err.stack || err));
  console.log('console: ' + consoleProblems.join(' | '));
  for (const [i, b] of open.entries()) {
    for (const [j, pg] of b.ctx.pages().entries()) {
      try {
        console.log('page ' + i + '.' + j + ' ' + pg.url() + ':\n' + await pg.locator('body').innerText());
        await pg.screenshot({ path: path.join(cfg.outDir, 'failure-' + i + '-' + j + '.png'), fullPage: true });
      } catch (e) { /* the page is gone */ }
    }
  }
}

try {
const p1 = await browser('person-one');
const page = p1.ctx.pages()[0] || await p1.ctx.newPage();

// The home page.
await page.goto(cfg.origin + '/');
checks.ok((await text(page, 'h1')).includes('records agreements'), 'the home page says what the service is');
checks.ok(await page.locator('a[href="/llms.txt"]').count() === 1 && await page.locator('a[href="/openapi.json"]').count() === 1,
  'the home page links to llms.txt and openapi.json');
await shot(page, 'home');
await axe(page, 'home', checks);

// The invitation link from the email: the fragment leaves the address bar.
await page.goto(cfg.one.link);
await page.locator('#claim').waitFor();
checks.ok(!page.url().includes('#') && !page.url().includes(cfg.one.secret), 'the address bar no longer holds the fragment secret');
checks.ok(await page.evaluate(s => !location.href.includes(s) && !document.body.innerText.includes(s), cfg.one.secret),
  'the secret is neither in location nor on the page');
const deadlineText = await text(page, '#a-deadline-local') + ' ' + await text(page, '#a-deadline-utc');
checks.ok(/Europe\/Berlin/.test(deadlineText) && /UTC/.test(deadlineText), 'the deadline is shown in the reader\'s zone and in UTC: ' + deadlineText);
checks.ok((await text(page, '#a-revcheck')).includes('matches') && (await text(page, '#a-mdcheck')).includes('matches'),
  'both digests are recomputed in the browser and match');
checks.ok((await text(page, '#roster')).includes('AI agent') && (await text(page, '#roster')).includes('required'),
  'the roster shows kinds and required flags');
await shot(page, 'invitation');
await axe(page, 'invitation', checks);

// A wrong proof code.
await page.fill('#proof', 'this-is-not-the-proof-code');
await page.click('#claim-submit');
await page.locator('#proof-error', { hasText: 'does not match' }).waitFor();
checks.ok(await page.getAttribute('#proof', 'aria-invalid') === 'true', 'the wrong proof code is marked invalid');
checks.ok(await wrongProofAtField(page), 'the wrong proof code is explained at its field, which names the explanation');
await shot(page, 'wrong-proof');
await axe(page, 'wrong proof', checks);

// The right one, pasted with whitespace around it.
await page.fill('#proof', '  ' + cfg.one.proof + '\n');
await page.click('#claim-submit');
await page.locator('[data-outcome="pending"]').waitFor();
checks.ok(await page.locator('#alert').isHidden(), 'the earlier error is gone once the claim succeeds');
await shot(page, 'room');
await axe(page, 'room', checks);

// A reload keeps the room: the token is in sessionStorage.
await page.reload();
await page.locator('[data-outcome="pending"]').waitFor();
const stored = await page.evaluate(() => JSON.stringify(sessionStorage) + '|' + JSON.stringify(localStorage) + '|' + document.cookie);
checks.ok(stored.includes('csp_') && !stored.includes(cfg.one.secret) && !stored.includes(cfg.one.proof),
  'after a reload the room shows again; sessionStorage holds the token, not the secret or the proof');
let navigations = 0;
page.on('framenavigated', f => { if (f === page.mainFrame()) navigations++; });
await page.evaluate(() => { window.stillTheSamePage = true; });

// A comment: the counter counts characters; participant text stays text.
await page.fill('#post-body', 'x'.repeat(4001));
checks.ok((await text(page, '#post-counter')).startsWith('4,001 of 4,000') && await page.locator('#post-counter.over').count() === 1,
  'the counter shows 4,001 of 4,000 and marks it');
const comment = 'Looks right to me 👍 <img src=x id=injected> <b>not bold</b> & done';
await page.fill('#post-body', comment);
checks.ok((await text(page, '#post-counter')).startsWith([...comment].length + ' of 4,000'), 'the counter counts code points');
await page.click('#post-submit');
await page.locator('ol.events li .body', { hasText: 'Looks right' }).waitFor();
checks.ok(await page.locator('ol.events li .body').first().textContent() === comment && await page.locator('#injected').count() === 0,
  'the comment is shown as text, never as HTML');
await shot(page, 'comment');

// Agree, by keyboard, behind the confirmation.
await decide(page, 'agree', true);
const confirmText = await text(page, '#confirm');
checks.ok(confirmText.includes(cfg.digest) && /final/i.test(confirmText), 'the confirmation names the revision digest and says it is final');
checks.ok(await focusReaches(page, '#confirm-no'), 'the confirmation opens with Cancel focused');
await shot(page, 'confirm');
await axe(page, 'confirmation', checks);
await page.keyboard.press('Shift+Tab');
checks.ok(await page.evaluate(() => document.activeElement.id) === 'confirm-yes', 'Shift+Tab reaches the confirm button');
await page.keyboard.press('Enter');
await page.locator('#you', { hasText: 'Your decision is recorded' }).waitFor();
checks.ok(await page.locator('#decide').isHidden(), 'the decision buttons are gone once decided');
await shot(page, 'agreed');

// The second person, in a browser of their own, meets a stale revision
// first: the request is changed in flight to name another digest.
const p2 = await browser('person-two');
const page2 = p2.ctx.pages()[0] || await p2.ctx.newPage();
await claim(page2, cfg.two.link, cfg.two.proof);
await page2.route('**/events', async route => {
  const body = JSON.parse(route.request().postData());
  body.digest = '0'.repeat(64);
  await route.continue({ postData: JSON.stringify(body) });
}, { times: 1 });
await decide(page2, 'agree');
await page2.click('#confirm-yes');
await page2.locator('#alert', { hasText: 'has changed' }).waitFor();
checks.ok(await page2.locator('#decide').isVisible(), 'after a stale revision nothing is recorded and the person may decide again');
await shot(page2, 'stale-revision');
await axe(page2, 'stale revision', checks);
await decide(page2, 'agree');
await page2.click('#confirm-yes');
await page2.locator('#you', { hasText: 'Your decision is recorded' }).waitFor();

// The agent decides through the agent API; the first page updates itself.
await io.ask('agent-decides');
await page.locator('[data-outcome="reached"]').waitFor({ timeout: 20000 });
checks.ok(navigations === 0 && await page.evaluate(() => window.stillTheSamePage === true), 'the page shows reached without a reload');
checks.ok((await text(page, '#status')).includes('reached'), 'the live region announces the outcome');
await shot(page, 'reached');
await axe(page, 'reached', checks);

// The artifact, checked against its SHA-256.
const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
const saved = path.join(cfg.outDir, 'CONSENSUS.md');
await download.saveAs(saved);
sum = crypto.createHash('sha256').update(fs.readFileSync(saved)).digest('hex');
checks.ok(download.suggestedFilename() === 'CONSENSUS.md' && sum === (await text(page, '#artifact-sha')).trim(),
  'the downloaded CONSENSUS.md hashes to the SHA-256 the page shows');
await page.locator('#artifact-check', { hasText: 'matches' }).waitFor();
await shot(page, 'downloaded');
token = await page.evaluate(id => JSON.parse(sessionStorage.getItem('consensus:' + id)).participantToken, cfg.one.id);

// A closed tab: a new tab has no access and says to open the link again.
const fresh = await p1.ctx.newPage();
await fresh.goto(cfg.origin + '/invite/' + cfg.one.id);
await fresh.locator('#nolink').waitFor();
checks.ok((await text(fresh, '#nolink')).includes('open the private link in your invitation email again'), 'a new tab asks for the link again');
await shot(fresh, 'closed-tab');
await axe(fresh, 'closed tab', checks);
await fresh.close();

// A quorum room: 2 of the 3 required participants must agree. The person
// agrees, an agent agrees, and the room is reached while the third is silent.
const page5 = await p1.ctx.newPage();
await claim(page5, cfg.five.link, cfg.five.proof);
checks.ok((await text(page5, '#a-rule')).includes('2 of the 3 required participants must agree'), 'the page states the quorum rule in words');
checks.ok((await text(page5, '#a-revcheck')).includes('matches'), 'the revision digest of a quorum revision recomputes in the browser');
checks.ok((await text(page5, '#rule-progress')).includes('2 more agreements are needed'), 'the room says how many agreements are needed');
await decide(page5, 'agree');
await page5.click('#confirm-yes');
await page5.locator('#you', { hasText: 'Your decision is recorded' }).waitFor();
await page5.locator('#rule-progress', { hasText: '1 more agreement is needed' }).waitFor();
await shot(page5, 'quorum-pending');
await io.ask('quorum-agent-agrees');
await page5.locator('[data-outcome="reached"]').waitFor({ timeout: 20000 });
checks.ok((await text(page5, '#outcome')).includes('2 required participants agreed'), 'the reached quorum room says two agreed, as the rule asks');
await shot(page5, 'quorum-reached');
await axe(page5, 'quorum reached', checks);
await page5.close();

// A revoked participant: the open room says so at its next reading.
const page3 = await p1.ctx.newPage();
await claim(page3, cfg.three.link, cfg.three.proof);
await io.ask('revoke');
await page3.locator('#alert', { hasText: 'revoked' }).waitFor({ timeout: 20000 });
checks.ok((await text(page3, 'h1')).includes('access to this agreement has ended'), 'the revoked participant sees that access ended');
await shot(page3, 'revoked');
await axe(page3, 'revoked', checks);
await page3.close();

// An expired invitation.
await io.ask('expire');
const page4 = await p1.ctx.newPage();
await page4.goto(cfg.four.link);
await page4.locator('#alert', { hasText: 'deadline may have passed' }).waitFor();
checks.ok(!page4.url().includes('#'), 'the expired link also leaves the address bar');
await shot(page4, 'expired');
await axe(page4, 'expired', checks);
await page4.close();

} catch (err) {
  await explain(err);
  checks.failures.push(String(err));
}
for (const b of open) await b.close().catch(() => {});
checks.ok(consoleProblems.length === 0, 'no console error or warning: ' + consoleProblems.join(' | '));
io.result({ requested, tokens: token ? [token] : [], artifactSHA256: sum, failures: checks.failures });
io.close();
process.exitCode = checks.failures.length ? 1 : 0;

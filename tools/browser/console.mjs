// The operators' console in a real browser (Debian's chromium through
// playwright-core), started by internal/e2e's TestConsoleInBrowser. An
// owner enrolls from the link `consensusd workspace create --print-link`
// gives, with a virtual WebAuthn authenticator (the DevTools protocol's
// WebAuthn domain); signs out and in again; creates an agreement through the
// form after a dry run whose digest the page recomputes; watches an agent's
// decision arrive without a reload; amends, resends and revokes behind
// confirmations; creates and revokes an API key; invites a viewer, who
// enrolls in a second browser, sees no button that changes anything, and is
// signed out within seconds of being removed; and reads the audit log.
// Every step is screenshot at desktop and phone width and checked with
// axe-core.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { channel, Checks, screenshots, axe, DESKTOP } from './lib.mjs';

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-quic'];

const io = channel();
const cfg = await io.next(); // { origin, chromium, outDir, enrollLink }
const checks = new Checks();
const requested = [];
const problems = [];
const open = [];
let removalSeconds = -1;

/** Asks the Go side to act with data, and returns its answer. */
async function ask(need, data) {
  process.stdout.write('@@ ' + JSON.stringify({ need, data }) + '\n');
  const answer = await io.next();
  if (answer.done !== need) throw new Error('the Go test answered ' + JSON.stringify(answer) + ' to ' + need);
  return answer;
}

/** A browser of its own with a virtual passkey authenticator. */
async function browser(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'consensus-console-' + name + '-'));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: cfg.chromium, headless: true, args: FLAGS, viewport: DESKTOP, timezoneId: 'Europe/Berlin',
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  ctx.on('request', r => requested.push(r.url()));
  ctx.on('console', m => {
    if ((m.type() === 'error' || m.type() === 'warning') && !m.text().startsWith('Failed to load resource')) problems.push(name + ': ' + m.text());
  });
  ctx.on('weberror', e => problems.push(name + ': ' + e.error().message));
  const page = ctx.pages()[0] || await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  const b = { ctx, page, cdp, authenticatorId, close: async () => { await ctx.close(); fs.rmSync(dir, { recursive: true, force: true }); } };
  open.push(b);
  return b;
}

async function shot(page, name) {
  await axe(page, name, checks);
  await screenshots(page, cfg.outDir, name, checks);
}

async function noStorage(page, what) {
  const n = await page.evaluate(() => localStorage.length + sessionStorage.length);
  checks.ok(n === 0, what + ': nothing in localStorage or sessionStorage');
}

try {
  const owner = await browser('owner');
  const page = owner.page;

  // 1. Enroll from the printed link; the fragment leaves the address bar.
  await page.goto(cfg.enrollLink);
  await page.waitForSelector('#displayName');
  checks.ok(!page.url().includes('#') && !page.url().includes('coe_'), 'the enrollment token left the address bar');
  await page.fill('#displayName', 'Olga Owner');
  await shot(page, 'enroll');
  await page.focus('#enroll');
  await page.keyboard.press('Enter');
  await page.waitForURL('**/console/agreements');
  await page.waitForSelector('text=No agreement yet.');
  checks.ok((await page.innerText('#who')).includes('Olga Owner (owner) in acme'), 'signed in as the new owner after enrolling');
  await shot(page, 'agreements-empty');
  await noStorage(page, 'after enrolling');

  // 2. Sign out, then in again with the passkey, by keyboard only.
  await page.click('#signout');
  await page.waitForURL('**/console/signin');
  await shot(page, 'signin');
  await page.focus('#signin');
  await page.keyboard.press('Enter');
  await page.waitForURL('**/console/agreements');
  checks.ok((await page.innerText('#who')).includes('Olga Owner'), 'signed in again with the passkey');

  // 3. A new agreement through the form, by keyboard: a dry run first.
  await page.goto(cfg.origin + '/console/new');
  await page.focus('#title');
  await page.keyboard.type('Adopt the release checklist');
  await page.keyboard.press('Tab');
  await page.keyboard.type('Agree on the checklist every release follows.');
  await page.keyboard.press('Tab');
  await page.keyboard.type('Every release is tagged');
  await page.fill('#p0-name', 'Ada');
  await page.fill('#p0-email', 'ada@people.example');
  await page.focus('#add-participant');
  await page.keyboard.press('Enter');
  await page.keyboard.type('Checklist-Bot');
  await page.fill('#p1-email', 'bot@agents.example');
  await page.selectOption('#p1-kind', 'agent');
  await shot(page, 'new-agreement-form');
  await page.focus('#dry-run');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#digest-check');
  const stated = await page.innerText('#stated-digest');
  const computed = await page.innerText('#computed-digest');
  checks.ok(/^[0-9a-f]{64}$/.test(stated) && stated === computed && (await page.getAttribute('#digest-check', 'class')) === 'ok',
    'the dry run\'s digest is recomputed in the browser and matches (' + stated.slice(0, 12) + '…)');
  await shot(page, 'new-agreement-preview');
  await page.click('#lock');
  await page.waitForURL(/\/console\/agreements\/[0-9a-f-]{36}$/);
  const agreementId = page.url().split('/').pop();
  await page.waitForSelector('tr[data-participant="Checklist-Bot"]');
  await shot(page, 'agreement-created');

  // 4. The agent decides on the agent API; the page shows it without a reload.
  const detail = await page.evaluate(async id => (await fetch('/console/api/agreements/' + id)).json(), agreementId);
  const bot = detail.participants.find(p => p.displayName === 'Checklist-Bot');
  await page.evaluate(() => { window.__notReloaded = true; });
  const t0 = Date.now();
  await ask('agent-decides', { invitationId: bot.invitationId, revisionDigest: detail.revisionDigest });
  await page.waitForFunction(() => document.querySelector('tr[data-participant="Checklist-Bot"] .decision')?.textContent === 'agree', null, { timeout: 15000 });
  checks.ok(await page.evaluate(() => window.__notReloaded === true), 'the agent\'s decision arrived without a reload (' + (Date.now() - t0) + ' ms)');
  await shot(page, 'agent-decided');

  // 5. Amend: the diff and the decision it makes stale, then lock.
  await page.fill('#amend-rules', 'Every release is tagged\nEvery release has notes');
  await page.click('#amend-review');
  await page.waitForSelector('#amend-lock');
  checks.ok((await page.innerText('#amend-diff')).includes('+ Rule: Every release has notes'), 'the amendment shows its diff');
  checks.ok((await page.innerText('#stale')).includes('Checklist-Bot'), 'the amendment names the decision it makes stale');
  await shot(page, 'amend-diff');
  await page.click('#amend-lock');
  await page.waitForFunction(() => /revision 2/.test(document.querySelector('#summary')?.textContent || ''), null, { timeout: 15000 });
  checks.ok(true, 'revision 2 is locked and shown live');

  // 6. Resend and revoke, each behind a confirmation naming the participant.
  await page.click('tr[data-participant="Ada"] .resend');
  await page.waitForSelector('#confirm[open]');
  checks.ok((await page.innerText('#confirm-text')).includes('Ada (ada@people.example)'), 'the resend confirmation names the participant');
  await shot(page, 'resend-confirm');
  await page.keyboard.press('Tab'); // from Cancel to … the dialog's buttons by keyboard
  await page.focus('#confirm-yes');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /new invitation to Ada/.test(document.querySelector('#status').textContent));
  checks.ok(true, 'the resend is confirmed by keyboard and queued');
  await page.click('tr[data-participant="Ada"] .revoke');
  await page.waitForSelector('#confirm[open]');
  checks.ok((await page.innerText('#confirm-yes')).includes('Revoke Ada'), 'the revoke confirmation names the participant');
  await page.click('#confirm-yes');
  await page.waitForFunction(() => document.querySelector('tr[data-participant="Ada"] td:nth-child(2)')?.textContent === 'revoked', null, { timeout: 15000 });
  checks.ok(true, 'Ada is shown revoked, live');
  await shot(page, 'revoked');

  // 7. An API key: created with scopes, its token shown once, then revoked.
  await page.goto(cfg.origin + '/console/keys');
  await page.fill('#key-name', 'deploy');
  await page.check('#scope-agreements-write');
  await page.click('#key-create');
  await page.waitForSelector('#token-value');
  const token = await page.innerText('#token-value');
  checks.ok(/^cok_[A-Za-z0-9_-]{43}$/.test(token), 'the new key\'s token is shown once');
  await page.click('#copy-token');
  checks.ok(await page.evaluate(() => navigator.clipboard.readText()) === token, 'the copy button copies the token');
  await shot(page, 'key-created');
  await page.reload();
  await page.waitForSelector('tr[data-key="deploy"]');
  checks.ok(!(await page.content()).includes(token), 'the token is gone once the page is left');
  await page.click('tr[data-key="deploy"] .revoke-key');
  await page.click('#confirm-yes');
  await page.waitForFunction(() => document.querySelector('tr[data-key="deploy"] td:nth-child(5)')?.textContent === 'revoked');
  checks.ok(true, 'the key is revoked');
  await shot(page, 'key-revoked');

  // 8. Invite a viewer, who enrolls in a browser of their own.
  await page.goto(cfg.origin + '/console/operators');
  await page.fill('#invite-email', 'vera@acme.example');
  await page.fill('#invite-name', 'Vera Viewer');
  await page.selectOption('#invite-role', 'viewer');
  await page.click('#invite');
  await page.waitForSelector('tr[data-operator="vera@acme.example"]');
  await shot(page, 'operator-invited');
  const { link } = await ask('viewer-link', { email: 'vera@acme.example' });
  const viewer = await browser('viewer');
  await viewer.page.goto(link);
  await viewer.page.click('#enroll');
  await viewer.page.waitForURL('**/console/agreements');
  await viewer.page.waitForSelector('td a');
  checks.ok((await viewer.page.locator('a[href="/console/new"]').count()) === 0, 'a viewer sees no new-agreement link');
  await viewer.page.goto(cfg.origin + '/console/agreements/' + agreementId);
  await viewer.page.waitForSelector('tr[data-participant="Checklist-Bot"]');
  checks.ok((await viewer.page.locator('button.resend, button.revoke, #amend form').count()) === 0, 'a viewer sees no resend, revoke or amend');
  const refused = await viewer.page.evaluate(async () => {
    const s = await (await fetch('/console/api/session')).json();
    const r = await fetch('/console/api/keys', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Consensus-CSRF': s.csrfToken }, body: '{"name":"x","scopes":["agreements:read"]}' });
    return r.status;
  });
  checks.ok(refused === 403, 'a viewer\'s change is refused by the service (' + refused + ')');
  await shot(viewer.page, 'viewer-agreement');
  await viewer.page.goto(cfg.origin + '/console/agreements');
  await viewer.page.waitForSelector('td a');

  // 9. The owner removes the viewer; the viewer's open console stops.
  await page.reload();
  await page.click('tr[data-operator="vera@acme.example"] .remove-operator');
  checks.ok((await page.innerText('#confirm-text')).includes('vera@acme.example'), 'the removal confirmation names the operator');
  const removedAt = Date.now();
  await page.click('#confirm-yes');
  await viewer.page.waitForFunction(() => document.querySelector('#heading')?.textContent === 'Signed out', null, { timeout: 10000 });
  removalSeconds = (Date.now() - removedAt) / 1000;
  checks.ok(removalSeconds < 5, 'the removed viewer\'s open console stopped working (' + removalSeconds.toFixed(2) + ' s, its list reads every 3 s)');
  await shot(viewer.page, 'viewer-removed');
  const after = await viewer.page.evaluate(async () => (await fetch('/console/api/agreements')).status);
  checks.ok(after === 401, 'the removed viewer\'s next request is refused (' + after + ')');

  // 10. The audit log, filtered by action and by actor.
  await page.goto(cfg.origin + '/console/audit');
  await page.waitForSelector('#f-action');
  await page.fill('#f-action', 'operator.remove');
  checks.ok((await page.locator('tbody tr').count()) === 1 && (await page.innerText('tbody')).includes('Olga Owner'), 'the audit log shows the removal by its operator');
  await page.fill('#f-action', '');
  await page.fill('#f-actor', 'Vera');
  checks.ok((await page.innerText('tbody')).includes('operator.enroll'), 'the audit log filters by actor');
  await page.fill('#f-actor', '');
  await page.fill('#f-agreement', agreementId);
  const agreementRows = await page.innerText('tbody');
  checks.ok(['agreement.create', 'agreement.amend', 'invitation.resend', 'participant.revoke'].every(a => agreementRows.includes(a)), 'the audit log filters by agreement: create, amend, resend, revoke');
  await page.fill('#f-agreement', '');
  await shot(page, 'audit');
  await noStorage(page, 'at the end');
  const cookies = await owner.ctx.cookies();
  io.result({ requested, sessionTokens: cookies.filter(c => c.value.startsWith('coc_')).map(c => c.value), keyToken: token, removalSeconds, problems, failures: checks.failures });
} catch (e) {
  checks.ok(false, 'the flow ran to its end: ' + (e.stack || e));
  io.result({ requested, failures: checks.failures, problems });
} finally {
  for (const b of open) await b.close().catch(() => {});
  io.close();
  checks.ok(problems.length === 0, 'no error in the browser console: ' + problems.join(' | '));
  process.exitCode = checks.failures.length ? 1 : 0;
}

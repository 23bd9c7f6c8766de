// Over 400 lines: one browser flow, told step by step, whose steps share one page and its state.
// The operators' console in a real browser (Debian's chromium through
// playwright-core), started by internal/e2e's TestConsoleInBrowser against
// a service on make run's kind of origin (http://localhost:PORT). An
// owner enrolls from the link `consensusd workspace create --print-link`
// gives, with a virtual WebAuthn authenticator (the DevTools protocol's
// WebAuthn domain); signs out and in again; creates an agreement through the
// form after a dry run whose digest the page recomputes; watches an agent's
// decision reach the agreement list through the request the list holds
// open on the service (no reload, no poll); amends, resends and revokes
// behind confirmations (Escape cancels); downloads the signed record and
// CONSENSUS.md once the outcome is final and checks that the SHA-256 the
// page shows is that of the downloaded bytes; creates and revokes an API
// key; invites a viewer, who enrolls in a second browser, sees no button
// that changes anything, and is signed out as soon as they are removed;
// filters and pages the audit log on the service; and, having lost the
// browser that holds the passkey, enrolls again from the link
// `consensusd operator link` prints and removes the lost passkey. From the agreement
// form on, the owner uses the keyboard alone (Tab, Enter, Space, Escape,
// and each control is reached with Tab). Every step is screenshot at
// desktop and phone width and checked with axe-core.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { channel, Checks, screenshots, axe, focusReaches, DESKTOP } from './lib.mjs';

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

/** Presses Tab until the focus is on sel: proof that it is reachable by keyboard. */
async function tabTo(page, sel, max = 120) {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate(s => document.activeElement?.matches(s) || false, sel)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(sel + ' is not reachable with Tab (' + max + ' presses)');
}

/** Waits until cond() holds, checking every 20 ms for at most 10 s. */
async function waitFor(cond, what) {
  for (const end = Date.now() + 10000; Date.now() < end; await new Promise(r => setTimeout(r, 20))) if (cond()) return;
  throw new Error('timed out: ' + what);
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
  checks.ok(await focusReaches(page, '#displayName'), 'the name field has the focus');
  await page.keyboard.type('Olga Owner');
  await shot(page, 'enroll');
  await tabTo(page, '#enroll');
  await page.keyboard.press('Enter');
  await page.waitForURL('**/console/agreements');
  await page.waitForSelector('text=No agreement yet.');
  checks.ok((await page.innerText('#who')).includes('Olga Owner (owner) in acme'), 'signed in as the new owner after enrolling');
  await shot(page, 'agreements-empty');
  await noStorage(page, 'after enrolling');

  // 2. Sign out, then in again with the passkey, by keyboard only.
  await tabTo(page, '#signout');
  await page.keyboard.press('Enter');
  await page.waitForURL('**/console/signin');
  await shot(page, 'signin');
  await tabTo(page, '#signin');
  await page.keyboard.press('Enter');
  await page.waitForURL('**/console/agreements');
  await page.waitForFunction(() => (document.querySelector('#who')?.textContent || '') !== '', null, { timeout: 10000 });
  checks.ok((await page.innerText('#who')).includes('Olga Owner'), 'signed in again with the passkey');

  // 3. A new agreement through the form, by keyboard: a dry run first.
  await page.goto(cfg.origin + '/console/new');
  await tabTo(page, '#title');
  await page.keyboard.type('Adopt the release checklist');
  await page.keyboard.press('Tab');
  await page.keyboard.type('Agree on the checklist every release follows.');
  await page.keyboard.press('Tab');
  await page.keyboard.type('Every release is tagged');
  await tabTo(page, '#p0-name');
  await page.keyboard.type('Ada');
  await page.keyboard.press('Tab');
  await page.keyboard.type('ada@agents.example');
  await page.keyboard.press('Tab');
  await page.keyboard.press('a'); // Ada is an agent too
  await tabTo(page, '#add-participant');
  await page.keyboard.press('Enter');
  checks.ok(await focusReaches(page, '#p1-name'), 'a new participant row takes the focus');
  await page.keyboard.type('Checklist-Bot');
  await page.keyboard.press('Tab');
  await page.keyboard.type('bot@agents.example');
  await page.keyboard.press('Tab');
  await page.keyboard.press('a'); // a closed select takes the option its first letter names
  checks.ok(await page.evaluate(() => document.activeElement?.id === 'p1-kind' && document.activeElement.value === 'agent'), 'the kind is chosen by keyboard');
  // Cleo, a person whom the outcome does not wait for.
  await tabTo(page, '#add-participant');
  await page.keyboard.press('Enter');
  await page.keyboard.type('Cleo');
  await page.keyboard.press('Tab');
  await page.keyboard.type('cleo@people.example');
  await tabTo(page, '#p2-required');
  await page.keyboard.press('Space');
  checks.ok(!(await page.isChecked('#p2-required')), 'Space makes a participant optional');
  checks.ok(await page.isHidden('#agree'), 'the quorum field is hidden while the rule is unanimity');
  await shot(page, 'new-agreement-form');
  await tabTo(page, '#dry-run');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#digest-check');
  const stated = await page.innerText('#stated-digest');
  const computed = await page.innerText('#computed-digest');
  checks.ok(/^[0-9a-f]{64}$/.test(stated) && stated === computed && (await page.getAttribute('#digest-check', 'class')) === 'ok',
    'the dry run\'s digest is recomputed in the browser and matches (' + stated.slice(0, 12) + '…)');
  await shot(page, 'new-agreement-preview');
  await tabTo(page, '#lock');
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/console\/agreements\/[0-9a-f-]{36}$/);
  const agreementId = page.url().split('/').pop();
  await page.waitForSelector('tr[data-participant="Checklist-Bot"]');
  checks.ok((await page.innerText('#terms-1')).includes('Agree on the checklist every release follows.') && (await page.innerText('#terms-1')).includes('Every release is tagged'),
    'the page shows the locked terms of revision 1: objective and rules');
  checks.ok(/Revision digest\s+[0-9a-f]{64}/.test(await page.innerText('#terms-1')), 'the terms show their digests');
  checks.ok((await page.innerText('#conversation')).includes('Nobody has written yet.'), 'an empty conversation says so');
  await shot(page, 'agreement-created');

  const detail = await page.evaluate(async id => (await fetch('/console/api/agreements/' + id)).json(), agreementId);
  const bot = detail.participants.find(p => p.displayName === 'Checklist-Bot');
  await ask('agent-joins', { invitationId: bot.invitationId });

  // 4. The list holds a request open on the service; the agent's decision,
  // made in another request, arrives through it: no reload, no poll.
  const lists = [];
  page.on('request', r => {
    if (r.url().includes('/console/api/agreements?')) lists.push({ r, prefer: r.headers()['prefer'] || '', startedAt: Date.now(), doneAt: 0 });
  });
  page.on('requestfinished', r => { const l = lists.find(x => x.r === r); if (l) l.doneAt = Date.now(); });
  await page.goto(cfg.origin + '/console/agreements');
  const row = 'tr[data-agreement="' + agreementId + '"]';
  await page.waitForSelector(row + ' .waits');
  checks.ok((await page.innerText(row + ' .waits')) === 'Ada, Checklist-Bot', 'the list says what the new agreement waits for');
  await page.waitForFunction(() => /Up to date/.test(document.querySelector('#list-live')?.textContent || ''));
  await waitFor(() => lists.some(l => l.prefer === 'wait=25' && !l.doneAt), 'the list holds a request open');
  await shot(page, 'list-live');
  await page.evaluate(() => { window.__notReloaded = true; });
  const decidedAt = Date.now();
  await ask('agent-decides', {});
  await page.waitForFunction(sel => document.querySelector(sel)?.textContent === 'Ada', row + ' .waits', { timeout: 10000 });
  const arrived = Date.now();
  const carrier = lists.find(l => l.doneAt >= decidedAt);
  checks.ok(await page.evaluate(() => window.__notReloaded === true), 'the decision reached the list without a reload (' + (arrived - decidedAt) + ' ms after it was asked for)');
  checks.ok(!!carrier && carrier.prefer === 'wait=25' && carrier.startedAt < decidedAt,
    'the list learned of it through the request it held open before the decision was made (' + (carrier ? 'held ' + (carrier.doneAt - carrier.startedAt) + ' ms' : 'none') + ')');
  const before = lists.length;
  await page.waitForTimeout(3500);
  checks.ok(lists.length - before <= 1 && lists.slice(before).every(l => l.prefer === 'wait=25' && !l.doneAt),
    'no poll: in 3.5 s of quiet the list sent only its next held request (' + (lists.length - before) + ')');
  await shot(page, 'list-updated-live');

  // 5. One agreement's page: the decision is there; amend by keyboard, with
  // the diff and the decision it makes stale.
  await page.goto(cfg.origin + '/console/agreements/' + agreementId);
  await page.waitForFunction(() => document.querySelector('tr[data-participant="Checklist-Bot"] .decision')?.textContent === 'agree');
  checks.ok(true, 'the agreement page shows the agent\'s decision');
  await tabTo(page, '#amend-rules');
  await page.keyboard.press('Control+End');
  await page.keyboard.press('Enter');
  await page.keyboard.type('Every release has notes');
  await tabTo(page, '#amend-review');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#amend-lock');
  checks.ok((await page.innerText('#amend-diff')).includes('+ Rule: Every release has notes'), 'the amendment shows its diff');
  checks.ok((await page.innerText('#stale')).includes('Checklist-Bot'), 'the amendment names the decision it makes stale');
  await shot(page, 'amend-diff');
  await tabTo(page, '#amend-lock');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /revision 2/.test(document.querySelector('#summary')?.textContent || ''), null, { timeout: 15000 });
  checks.ok(true, 'revision 2 is locked by keyboard and shown live');

  // 6. Resend and revoke, each behind a confirmation naming the participant:
  // Escape cancels, Enter on the focused button confirms.
  await tabTo(page, 'tr[data-participant="Ada"] .resend');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#confirm[open]');
  checks.ok((await page.innerText('#confirm-text')).includes('Ada (ada@agents.example)'), 'the resend confirmation names the participant');
  checks.ok(await focusReaches(page, '#confirm-no'), 'the confirmation opens with the focus on Cancel');
  await shot(page, 'resend-confirm');
  // The room changes while the confirmation is open: the live update
  // replaces the participants' rows, and the button that opened it.
  const opener = await page.$('tr[data-participant="Ada"] .resend');
  await ask('agent-comments', {});
  await page.waitForFunction(b => !b.isConnected, opener, { timeout: 15000 });
  checks.ok(await page.evaluate(() => document.querySelector('#confirm').open && document.activeElement?.id === 'confirm-no'),
    'a live update leaves the open confirmation and its focus alone');
  await page.keyboard.press('Escape');
  await page.waitForSelector('#confirm:not([open])', { state: 'attached' });
  await page.waitForSelector('#events li[data-action="comment"] blockquote.said');
  checks.ok((await page.innerText('#events li[data-action="comment"] blockquote.said')) === 'Reading revision 2.' &&
    (await page.innerText('#events li[data-action="comment"] .meta')).includes('Checklist-Bot (agent) commented on revision 2'),
    'the agent\'s comment arrives live, marked as its own text');
  checks.ok((await page.innerText('#events li[data-action="agree"] .meta')).includes('Checklist-Bot (agent) agreed on revision 1'), 'the agent\'s decision is in the conversation');
  checks.ok((await page.innerText('#terms')).includes('Revision 2 (current)') && (await page.innerText('#terms-2')).includes('Every release has notes'), 'the terms of revision 2 are shown with those of revision 1');
  checks.ok(await focusReaches(page, 'tr[data-participant="Ada"] .resend'), 'Escape closes the confirmation and gives the focus back to Resend, as re-rendered');
  await page.waitForTimeout(300);
  checks.ok(!/new invitation to Ada/.test(await page.innerText('#status')), 'Escape sent nothing');
  await page.keyboard.press('Space');
  await page.waitForSelector('#confirm[open]');
  await page.keyboard.press('Shift+Tab');
  checks.ok(await page.evaluate(() => document.activeElement?.id === 'confirm-yes'), 'Shift+Tab reaches the confirming button');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /new invitation to Ada/.test(document.querySelector('#status').textContent));
  checks.ok(true, 'the resend is confirmed by keyboard and queued');
  await tabTo(page, 'tr[data-participant="Cleo"] .revoke');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#confirm[open]');
  checks.ok((await page.innerText('#confirm-yes')).includes('Revoke Cleo'), 'the revoke confirmation names the participant');
  await shot(page, 'revoke-confirm');
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('tr[data-participant="Cleo"] td:nth-child(2)')?.textContent === 'revoked', null, { timeout: 15000 });
  checks.ok(true, 'Cleo is shown revoked, live');
  await shot(page, 'revoked');

  // 7. Both agents agree to revision 2: the outcome is
  // reached, live, and the outcome's CONSENSUS.md and the signed record are
  // offered with the SHA-256 of the bytes offered; the downloads are made
  // by keyboard and hashed here, and the Go test compares both hashes with
  // the participant's API.
  checks.ok((await page.locator('#record-pending').count()) === 1, 'no record is offered while the outcome is pending');
  const rev2 = await page.evaluate(async id => (await fetch('/console/api/agreements/' + id)).json(), agreementId);
  await ask('agent-decides-again', { revisionDigest: rev2.revisionDigest, adaInvitationId: rev2.participants.find(p => p.displayName === 'Ada').invitationId });
  await page.waitForFunction(() => document.querySelector('#outcome')?.textContent === 'reached', null, { timeout: 15000 });
  await page.waitForSelector('#download-record');
  await page.waitForSelector('#download-md');
  checks.ok(true, 'the agreement settles the outcome, shown without a reload');
  checks.ok(!/waits for/.test(await page.innerText('#summary')) && /final since/.test(await page.innerText('#summary')), 'a reached agreement says since when it is final, not what it waits for');
  checks.ok((await page.innerText('#download-revision')).includes('revision-2.md') && (await page.getAttribute('#download-revision', 'download')) === 'revision-2.md',
    'the revision\'s own text is offered under its own name, not as CONSENSUS.md');
  const downloaded = {};
  for (const [id, file] of [['record', 'consensus-record-' + agreementId + '.json'], ['md', 'CONSENSUS.md']]) {
    await tabTo(page, '#download-' + id);
    const [download] = await Promise.all([page.waitForEvent('download'), page.keyboard.press('Enter')]);
    const bytes = fs.readFileSync(await download.path());
    const shown = await page.innerText('#' + id + '-sha');
    const mine = crypto.createHash('sha256').update(bytes).digest('hex');
    checks.ok(download.suggestedFilename() === file && bytes.length > 0 && shown === mine,
      file + ': the SHA-256 the page shows is the SHA-256 of the downloaded bytes (' + mine.slice(0, 12) + '…, ' + bytes.length + ' bytes)');
    checks.ok(/matches the service/.test(await page.innerText('#downloads')), file + ': the page says its hash matches the service\'s');
    downloaded[id] = mine;
    if (id === 'record') {
      const rec = JSON.parse(bytes.toString('utf8'));
      checks.ok(rec.outcome?.status === 'reached' && rec.signature?.alg === 'Ed25519', 'the record is the signed consensus-record of the reached outcome');
    } else {
      checks.ok(bytes.toString('utf8').startsWith('# '), 'CONSENSUS.md is the outcome\'s Markdown');
    }
  }
  await shot(page, 'downloads');

  // 8. An API key, by keyboard: created with scopes, its token shown once
  // and copied, then revoked behind a confirmation.
  await page.goto(cfg.origin + '/console/keys');
  await page.waitForSelector('#no-key');
  checks.ok((await page.innerText('#no-key')).startsWith('No key yet.'), 'an empty keys table says "No key yet."');
  await shot(page, 'keys-empty');
  await tabTo(page, '#key-name');
  await page.keyboard.type('deploy');
  await tabTo(page, '#scope-agreements-write');
  await page.keyboard.press('Space');
  checks.ok(await page.isChecked('#scope-agreements-write'), 'Space ticks a scope');
  await tabTo(page, '#key-create');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#token-value');
  const token = await page.innerText('#token-value');
  checks.ok(/^cok_[A-Za-z0-9_-]{43}$/.test(token), 'the new key\'s token is shown once');
  checks.ok(await focusReaches(page, '#copy-token'), 'the focus moves to the copy button');
  await page.keyboard.press('Enter');
  // The click handler writes the clipboard asynchronously: wait for it,
  // bounded, rather than read it in the same instant.
  const copied = await page.waitForFunction(async t => (await navigator.clipboard.readText()) === t, token, { timeout: 5000 }).then(() => true, () => false);
  checks.ok(copied, 'the copy button copies the token');
  await shot(page, 'key-created');
  await page.reload();
  await page.waitForSelector('tr[data-key="deploy"]');
  checks.ok(!(await page.content()).includes(token), 'the token is gone once the page is left');
  await tabTo(page, 'tr[data-key="deploy"] .revoke-key');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#confirm[open]');
  checks.ok((await page.innerText('#confirm-text')).includes('deploy'), 'the key\'s revocation names the key');
  await shot(page, 'key-revoke-confirm');
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('tr[data-key="deploy"] td:nth-child(5)')?.textContent === 'revoked');
  checks.ok(true, 'the key is revoked by keyboard');
  await shot(page, 'key-revoked');

  // 9. Invite a viewer by keyboard, who enrolls in a browser of their own.
  await page.goto(cfg.origin + '/console/operators');
  await tabTo(page, '#invite-email');
  await page.keyboard.type('vera@acme.example');
  await page.keyboard.press('Tab');
  await page.keyboard.type('Vera Viewer');
  await page.keyboard.press('Tab');
  await page.keyboard.press('v'); // a closed select takes the option its first letter names
  checks.ok(await page.evaluate(() => document.activeElement?.id === 'invite-role' && document.activeElement.value === 'viewer'), 'the role is chosen by keyboard');
  await tabTo(page, '#invite');
  await page.keyboard.press('Enter');
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
  await viewer.page.goto(cfg.origin + '/console/new');
  await viewer.page.waitForSelector('#alert:not([hidden])');
  checks.ok((await viewer.page.innerText('#alert')).includes('cannot create agreements'), 'a viewer opening /console/new is told they cannot create');
  checks.ok((await viewer.page.locator('#agreement').count()) === 0, 'a viewer is shown no agreement form');
  await shot(viewer.page, 'viewer-new-refused');
  await viewer.page.goto(cfg.origin + '/console/agreements');
  await viewer.page.waitForSelector('td a');
  await viewer.page.waitForFunction(() => /Up to date/.test(document.querySelector('#list-live')?.textContent || ''));

  // 10. The owner removes the viewer by keyboard; the viewer's open list,
  // held on the service, ends at once.
  await page.reload();
  await tabTo(page, 'tr[data-operator="vera@acme.example"] .remove-operator');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#confirm[open]');
  checks.ok((await page.innerText('#confirm-text')).includes('vera@acme.example'), 'the removal confirmation names the operator');
  await shot(page, 'operator-remove-confirm');
  await page.keyboard.press('Shift+Tab');
  const removedAt = Date.now();
  await page.keyboard.press('Enter');
  await viewer.page.waitForFunction(() => document.querySelector('#heading')?.textContent === 'Signed out', null, { timeout: 10000 });
  removalSeconds = (Date.now() - removedAt) / 1000;
  checks.ok(removalSeconds < 2, 'the removed viewer\'s open console stopped working (' + removalSeconds.toFixed(2) + ' s: its held list ended)');
  await shot(viewer.page, 'viewer-removed');
  const after = await viewer.page.evaluate(async () => (await fetch('/console/api/agreements')).status);
  checks.ok(after === 401, 'the removed viewer\'s next request is refused (' + after + ')');

  // 11. The audit log, filtered on the service by action, actor and
  // agreement, by keyboard; then paged.
  const audits = [];
  page.on('request', r => { if (r.url().includes('/console/api/audit?')) audits.push(new URL(r.url()).searchParams); });
  await page.goto(cfg.origin + '/console/audit');
  await page.waitForSelector('#audit tbody tr');
  const filter = async (field, value) => {
    await tabTo(page, field);
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    await page.keyboard.type(value);
    await page.keyboard.press('Escape'); // closes the suggestions of the action's list, if open
    const [resp] = await Promise.all([page.waitForResponse(r => r.url().includes('/console/api/audit?')), page.keyboard.press('Enter')]);
    await page.waitForFunction(() => document.querySelector('#status')?.textContent === document.querySelector('#audit caption')?.textContent);
    return new URL(resp.url()).searchParams;
  };
  let q = await filter('#f-action', 'operator.remove');
  checks.ok(q.get('action') === 'operator.remove' && q.get('order') === 'newest', 'the action filter goes to the service (' + q + ')');
  checks.ok((await page.locator('#audit tbody tr').count()) === 1 && (await page.innerText('#audit tbody')).includes('Olga Owner'), 'the audit log shows the removal by its operator');
  await shot(page, 'audit-action');
  await filter('#f-action', '');
  q = await filter('#f-actor', 'Vera');
  checks.ok(q.get('actor') === 'Vera' && (await page.innerText('#audit tbody')).includes('operator.enroll'), 'the audit log filters by actor on the service');
  await filter('#f-actor', '');
  q = await filter('#f-agreement', agreementId);
  const agreementRows = await page.innerText('#audit tbody');
  checks.ok(q.get('agreementId') === agreementId && ['agreement.create', 'agreement.amend', 'invitation.resend', 'participant.revoke'].every(a => agreementRows.includes(a)),
    'the audit log filters by agreement on the service: create, amend, resend, revoke');
  await shot(page, 'audit-agreement');
  // Pages of three, newest first; the next page is asked for by keyboard.
  await page.goto(cfg.origin + '/console/audit?limit=3');
  await page.waitForSelector('#audit tbody tr');
  checks.ok((await page.locator('#audit tbody tr').count()) === 3, 'a page holds the three newest entries');
  const firstSeqs = await page.innerText('#audit tbody');
  await tabTo(page, '#audit-more');
  const n = audits.length;
  await page.keyboard.press('Enter');
  await waitFor(() => audits.length > n, 'the next page is asked for');
  await page.waitForFunction(() => document.querySelectorAll('#audit tbody tr').length === 6);
  checks.ok(audits[audits.length - 1].get('before') !== null && (await page.innerText('#audit tbody')).startsWith(firstSeqs),
    'the next page follows on with before=' + audits[audits.length - 1].get('before') + ', the older entries below the newer');
  checks.ok(await focusReaches(page, '#audit tbody tr:nth-child(4)'), 'the focus moves to the first entry of the new page');
  await shot(page, 'audit-paged');
  await noStorage(page, 'at the end');

  // 12. The owner's browser, with its passkey, is lost: `consensusd operator
  // link` prints a new link, which enrolls a passkey in a new browser; the
  // old link says it was used; the lost passkey is removed there.
  await page.goto(cfg.enrollLink);
  await page.waitForSelector('#enroll-refused');
  checks.ok((await page.innerText('#enroll-refused')).includes('used already'), 'a used link says so in the service\'s words');
  await shot(page, 'enroll-used');
  await page.goto(cfg.origin + '/console/passkeys');
  await page.waitForSelector('tr[data-passkey]');
  checks.ok((await page.locator('tr[data-passkey] button.remove-passkey').count()) === 0 && (await page.innerText('#view')).includes('your only passkey'), 'the only passkey cannot be removed');
  const { link: again } = await ask('operator-link', {});
  const newOwner = await browser('owner-again');
  await newOwner.page.goto(again);
  await newOwner.page.waitForSelector('#displayName');
  checks.ok((await newOwner.page.inputValue('#displayName')) === 'Olga Owner', 'the new link enrolls the same operator');
  await newOwner.page.click('#enroll');
  await newOwner.page.waitForURL('**/console/agreements');
  checks.ok((await newOwner.page.innerText('#who')).includes('Olga Owner (owner) in acme'), 're-enrolled through consensusd operator link');
  await newOwner.page.goto(cfg.origin + '/console/passkeys');
  await newOwner.page.waitForFunction(() => document.querySelectorAll('tr[data-passkey]').length === 2);
  await shot(newOwner.page, 'passkeys');
  await tabTo(newOwner.page, 'tr[data-passkey]:first-child .remove-passkey');
  await newOwner.page.keyboard.press('Enter');
  await newOwner.page.waitForSelector('#confirm[open]');
  await newOwner.page.keyboard.press('Shift+Tab');
  await newOwner.page.keyboard.press('Enter');
  await newOwner.page.waitForFunction(() => document.querySelectorAll('tr[data-passkey]').length === 1);
  checks.ok(true, 'the lost passkey is removed by keyboard');
  await shot(newOwner.page, 'passkeys-one-left');
  await newOwner.page.goto(cfg.origin + '/console/agreements/' + agreementId);
  await newOwner.page.waitForSelector('#download-md');
  await shot(newOwner.page, 'agreement-reached');
  const cookies = await owner.ctx.cookies();
  io.result({ requested, sessionTokens: cookies.filter(c => c.value.startsWith('coc_')).map(c => c.value), keyToken: token, removalSeconds, problems, failures: checks.failures,
    agreementId, consensusSHA256: downloaded.md, recordSHA256: downloaded.record, relink: again });
} catch (e) {
  checks.ok(false, 'the flow ran to its end: ' + (e.stack || e));
  io.result({ requested, failures: checks.failures, problems });
} finally {
  for (const b of open) await b.close().catch(() => {});
  io.close();
  checks.ok(problems.length === 0, 'no error in the browser console: ' + problems.join(' | '));
  process.exitCode = checks.failures.length ? 1 : 0;
}

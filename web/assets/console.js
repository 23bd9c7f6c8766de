// The operators' console. One page shows the view its path names. The
// session is an HttpOnly cookie the page never sees; the CSRF token that
// every change carries is read from /console/api/session and kept in this
// page's memory only. Nothing is written to localStorage or sessionStorage,
// and no credential ever goes into a URL. Text from the service is only
// ever set as text (Trusted Types allow nothing else).
import { sha256Hex, canonicalJSON } from './api.js';

const $ = id => document.getElementById(id);
let session = null;

/** An element with attributes and children (strings become text). */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

class Problem extends Error {
  constructor(status, code, detail) { super(detail || code || ('HTTP ' + status)); this.status = status; this.code = code; }
}

function say(text) { $('status').textContent = text; }
function alertBox(text) {
  const a = $('alert');
  a.textContent = text || '';
  a.hidden = !text;
}

async function problem(resp) {
  let code = '', detail = '';
  try { const p = await resp.json(); code = p.code || ''; detail = p.detail || ''; } catch (e) { /* not a problem */ }
  return new Problem(resp.status, code, detail);
}

/** Calls the console API; a change carries the CSRF token. */
async function call(method, path, body, headers = {}) {
  const h = { ...headers };
  if (method !== 'GET' && session) h['X-Consensus-CSRF'] = session.csrfToken;
  const init = { method, headers: h, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) { h['Content-Type'] = 'application/json'; init.body = JSON.stringify(body); }
  const resp = await fetch('/console/api/' + path, init);
  if (resp.status === 401 && session) { signedOut(); throw new Problem(401, 'unauthorized', 'Your session ended. Sign in again.'); }
  if (!resp.ok) throw await problem(resp);
  return resp;
}
async function get(path) { return (await call('GET', path)).json(); }
async function send(method, path, body) {
  const resp = await call(method, path, body);
  return resp.status === 204 ? null : resp.json();
}

function signedOut() {
  session = null;
  $('nav').hidden = true;
  $('who').textContent = '';
  const v = $('view');
  v.replaceChildren(el('p', { text: 'You are signed out: your session ended or was ended by an owner.' }),
    el('p', {}, el('a', { href: '/console/signin', text: 'Sign in again' })));
  heading('Signed out');
}

function heading(text) {
  $('heading').textContent = text;
  document.title = text + ' · Consensus console';
}

function can(scope) { return !!session && session.scopes.includes(scope); }

/**
 * The element that now stands where el stood: el while it is in the page,
 * else the button of the same class and name that a live re-render put in
 * its place (null when there is none).
 */
function standIn(el) {
  if (!el || el.isConnected) return el;
  const name = el.getAttribute('data-name');
  const cls = el.classList[0];
  if (!name || !cls) return null;
  return [...document.querySelectorAll('#view button.' + cls)].find(b => b.getAttribute('data-name') === name) || null;
}

/**
 * Asks, in a modal dialog, to confirm an action named in words. Closing it
 * gives the focus back to the button that opened it, or to the one that
 * replaced it if the page was re-rendered meanwhile.
 */
function confirmAction(text, yes) {
  const d = $('confirm');
  const opener = document.activeElement;
  $('confirm-text').textContent = text;
  $('confirm-yes').textContent = yes;
  return new Promise(resolve => {
    const done = v => {
      d.close();
      $('confirm-yes').onclick = null;
      $('confirm-no').onclick = null;
      const back = standIn(opener);
      if (back && document.activeElement !== back) back.focus();
      resolve(v);
    };
    $('confirm-yes').onclick = () => done(true);
    $('confirm-no').onclick = () => done(false);
    d.oncancel = () => done(false);
    d.showModal();
    $('confirm-no').focus();
  });
}

function table(caption, head, rows) {
  return el('div', { class: 'scroll' }, el('table', {},
    el('caption', { class: 'muted', text: caption }),
    el('thead', {}, el('tr', {}, head.map(h => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, rows)));
}

function when(s) {
  if (!s) return '';
  const d = new Date(s);
  return isNaN(d) ? s : d.toISOString().replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');
}


// ---------------------------------------------------------------- passkeys

async function signIn() {
  alertBox('');
  say('Waiting for your passkey…');
  const begin = await (await fetch('/console/api/signin/begin', { method: 'POST', credentials: 'same-origin' })).json();
  const cred = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(begin.publicKey) });
  const resp = await fetch('/console/api/signin/finish', {
    method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ceremonyId: begin.ceremonyId, credential: cred.toJSON() }),
  });
  if (!resp.ok) throw await problem(resp);
  session = await resp.json();
  location.assign('/console/agreements');
}

function signinView() {
  heading('Sign in');
  const button = el('button', { type: 'button', id: 'signin' }, 'Sign in with a passkey');
  button.addEventListener('click', () => signIn().catch(e => { say(''); alertBox('Sign-in failed: ' + e.message); }));
  $('view').replaceChildren(
    el('p', { text: 'Operators sign in with the passkey they registered from their enrollment link. There is no password.' }),
    button);
}

async function enrollView() {
  heading('Register your passkey');
  // The token is in the fragment, which never reaches a server; take it
  // out of the address bar and the history at once.
  const token = location.hash.slice(1);
  history.replaceState(null, '', '/console/enroll');
  const v = $('view');
  if (!token.startsWith('coe_')) {
    v.replaceChildren(el('p', { text: 'Open the enrollment link from your email in this browser. A link works once, within 24 hours; ask an owner of your workspace for a new one if it has expired.' }));
    return;
  }
  let begin;
  try {
    begin = await send('POST', 'enroll/begin', { token });
  } catch (e) {
    const why = {
      'enrollment-expired': 'This enrollment link has expired: a link works within 24 hours. Ask an owner of your workspace to invite you again.',
      'enrollment-used': 'This enrollment link was used already: a link registers one passkey, once. Sign in with that passkey, or ask an owner of your workspace for a new link.',
    }[e.code] || 'This enrollment link does not work: it is not a link this service issued, or it was withdrawn. Ask an owner of your workspace for a new one.';
    v.replaceChildren(el('p', { class: 'box error', id: 'enroll-refused', text: why }),
      e.code === 'enrollment-used' ? el('p', {}, el('a', { href: '/console/signin', text: 'Sign in with your passkey' })) : '');
    return;
  }
  const name = el('input', { id: 'displayName', name: 'displayName', autocomplete: 'name', maxlength: '100', value: begin.operator.displayName || '' });
  const form = el('form', {},
    el('p', {}, 'You are enrolling as ', el('strong', { text: begin.operator.email }), ' with the role ', el('strong', { text: begin.operator.role }), '.'),
    el('div', { class: 'field' }, el('label', { for: 'displayName', text: 'Your name, as other operators will see it' }), name),
    el('button', { type: 'submit', id: 'enroll' }, 'Register a passkey and sign in'));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    alertBox('');
    try {
      say('Waiting for your passkey…');
      const cred = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(begin.publicKey) });
      const resp = await fetch('/console/api/enroll/finish', {
        method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ ceremonyId: begin.ceremonyId, token, displayName: name.value.trim(), credential: cred.toJSON() }),
      });
      if (!resp.ok) throw await problem(resp);
      location.assign('/console/agreements');
    } catch (e) {
      say('');
      const gone = e.code === 'enrollment-expired' || e.code === 'enrollment-used';
      alertBox('Registering the passkey failed: ' + e.message + (gone ? '' : '. Reload the link to try again.'));
    }
  });
  v.replaceChildren(form);
  name.focus();
}

// -------------------------------------------------------------- agreements

function waitsFor(d) {
  if (d.outcome.status !== 'pending') return '—';
  const open = d.participants.filter(p => p.required && !p.revoked && !p.decision).map(p => p.displayName);
  return open.length ? open.join(', ') : 'the decision rule';
}

async function agreementsView() {
  heading('Agreements');
  const v = $('view');
  const body = el('tbody');
  const live = el('p', { id: 'list-live', class: 'muted' });
  v.replaceChildren(
    can('agreements:write') ? el('p', {}, el('a', { href: '/console/new', text: 'New agreement' })) : '',
    el('div', { class: 'scroll' }, el('table', {}, el('caption', { class: 'muted', text: 'Newest first; updates the moment anything in the workspace changes.' }),
      el('thead', {}, el('tr', {}, ['Title', 'Status', 'Waits for', 'Deadline'].map(h => el('th', { scope: 'col', text: h })))), body)),
    live);
  const render = page => {
    body.replaceChildren(...page.agreements.map(a => el('tr', { 'data-agreement': a.agreementId },
      el('td', {}, el('a', { href: '/console/agreements/' + a.agreementId, text: a.title })),
      el('td', { class: 'status', text: a.outcome.status }),
      el('td', { class: 'waits', text: a.outcome.status !== 'pending' ? '—' : a.waitsFor.length ? a.waitsFor.join(', ') : 'the decision rule' }),
      el('td', { text: when(a.deadline) }))));
    if (!page.agreements.length) body.replaceChildren(el('tr', {}, el('td', { colspan: '4', text: 'No agreement yet.' })));
  };
  // A held read, as on one agreement's page: the service answers when
  // anything in the workspace changes on any replica (or after 25 s with
  // the same list), and at once when this session ends.
  let etag = '';
  for (;;) {
    let resp;
    try {
      resp = await call('GET', 'agreements?limit=50', undefined, etag ? { 'If-None-Match': etag, Prefer: 'wait=25' } : {});
    } catch (e) {
      if (e.status === 401) return;
      live.textContent = 'Reconnecting…';
      await new Promise(r => setTimeout(r, 2000));
      continue;
    }
    const tag = resp.headers.get('ETag') || '';
    const page = await resp.json();
    if (tag !== etag) { render(page); live.textContent = 'Up to date at ' + new Date().toLocaleTimeString(); }
    etag = tag;
  }
}

function participantRow(i) {
  const id = n => 'p' + i + '-' + n;
  return el('fieldset', { class: 'participant', 'data-row': String(i) },
    el('legend', { text: 'Participant ' + (i + 1) }),
    el('div', { class: 'field' }, el('label', { for: id('name'), text: 'Name' }), el('input', { id: id('name'), name: 'displayName', required: true, maxlength: '100' })),
    el('div', { class: 'field' }, el('label', { for: id('email'), text: 'Email' }), el('input', { id: id('email'), name: 'email', type: 'email', required: true })),
    el('div', { class: 'field' }, el('label', { for: id('kind'), text: 'Kind' }),
      el('select', { id: id('kind'), name: 'kind' }, el('option', { value: 'human', text: 'person' }), el('option', { value: 'agent', text: 'agent' }))),
    el('div', { class: 'row' }, el('input', { id: id('required'), name: 'required', type: 'checkbox', checked: true }), el('label', { for: id('required'), text: 'Required: the outcome waits for this participant' })));
}

function readAgreementForm(form) {
  const rules = form.querySelector('#rules').value.split('\n').map(s => s.trim()).filter(Boolean);
  const deadline = new Date(form.querySelector('#deadline').value);
  const body = {
    title: form.querySelector('#title').value.trim(),
    objective: form.querySelector('#objective').value.trim(),
    rules,
    deadline: isNaN(deadline) ? '' : deadline.toISOString().replace(/\.\d+Z$/, 'Z'),
    participants: [...form.querySelectorAll('fieldset.participant')].map(f => ({
      displayName: f.querySelector('[name=displayName]').value.trim(),
      kind: f.querySelector('[name=kind]').value,
      email: f.querySelector('[name=email]').value.trim(),
      required: f.querySelector('[name=required]').checked,
    })),
  };
  const rule = form.querySelector('#rule').value;
  if (rule === 'quorum') body.decisionRule = { type: 'quorum', agree: Number(form.querySelector('#agree').value) };
  return body;
}

function newView() {
  heading('New agreement');
  const rows = el('div', { id: 'rows' }, participantRow(0));
  const preview = el('section', { id: 'preview', 'aria-labelledby': 'preview-h', hidden: true });
  const soon = new Date(Date.now() + 7 * 864e5);
  soon.setSeconds(0, 0);
  const local = new Date(soon.getTime() - soon.getTimezoneOffset() * 6e4).toISOString().slice(0, 16);
  const form = el('form', { id: 'agreement' },
    el('div', { class: 'field' }, el('label', { for: 'title', text: 'Title' }), el('input', { id: 'title', required: true, maxlength: '200' })),
    el('div', { class: 'field' }, el('label', { for: 'objective', text: 'Objective' }), el('textarea', { id: 'objective', rows: '3', required: true })),
    el('div', { class: 'field' }, el('label', { for: 'rules', text: 'Rules, one a line' }), el('textarea', { id: 'rules', rows: '3' })),
    el('div', { class: 'field' }, el('label', { for: 'deadline', text: 'Deadline (your local time)' }), el('input', { id: 'deadline', type: 'datetime-local', value: local, required: true })),
    el('div', { class: 'field' }, el('label', { for: 'rule', text: 'Decision rule' }),
      el('select', { id: 'rule' }, el('option', { value: 'unanimity', text: 'every required participant agrees' }), el('option', { value: 'quorum', text: 'a quorum agrees' }))),
    el('div', { class: 'field' }, el('label', { for: 'agree', text: 'Quorum: how many must agree' }), el('input', { id: 'agree', type: 'number', min: '1', value: '1' })),
    el('h2', { text: 'Participants' }), rows,
    el('div', { class: 'row' },
      el('button', { type: 'button', id: 'add-participant', onclick: () => { const r = participantRow(rows.children.length); rows.append(r); r.querySelector('input').focus(); } }, 'Add a participant'),
      el('button', { type: 'submit', id: 'dry-run' }, 'Preview the revision')),
    preview);
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    alertBox('');
    const body = readAgreementForm(form);
    try {
      const p = await send('POST', 'agreements?dryRun=true', body);
      // Recompute the digest here: the SHA-256 of the canonical bytes,
      // after checking they are the canonical form of what they say.
      const bytes = new TextEncoder().encode(p.canonical);
      const mine = await sha256Hex(bytes);
      const stated = p.revisionDigest.replace(/^sha256:/, '');
      const canonicalOK = canonicalJSON(JSON.parse(p.canonical)) === p.canonical;
      const match = mine === stated && canonicalOK;
      const lock = el('button', { type: 'button', id: 'lock', disabled: !match }, 'Lock revision 1 and send the invitations');
      lock.addEventListener('click', async () => {
        try {
          lock.disabled = true;
          const out = await send('POST', 'agreements', body);
          location.assign('/console/agreements/' + out.agreementId);
        } catch (e) { lock.disabled = false; alertBox('Not created: ' + e.message); }
      });
      preview.replaceChildren(
        el('h2', { id: 'preview-h', tabindex: '-1', text: 'Revision 1, before it is locked' }),
        el('p', {}, 'Digest stated by the service: ', el('span', { class: 'digest', id: 'stated-digest', text: stated })),
        el('p', {}, 'Digest computed in this browser: ', el('span', { class: 'digest', id: 'computed-digest', text: mine })),
        el('p', { id: 'digest-check', class: match ? 'ok' : 'bad', text: match ? 'The digests match: this is exactly what will be locked.' : 'The digests differ: do not lock this revision.' }),
        el('details', {}, el('summary', { text: 'Canonical revision' }), el('pre', { id: 'canonical', text: p.canonical })),
        lock);
      preview.hidden = false;
      preview.querySelector('h2').focus();
    } catch (e) { alertBox('The preview was refused: ' + e.message); }
  });
  $('view').replaceChildren(el('p', { text: 'Nothing is stored until you lock the revision: the preview is a dry run.' }), form);
}

function lastDelivery(p) {
  const d = p.deliveries[p.deliveries.length - 1];
  return d ? d.state + (d.attempts ? ' (' + d.attempts + ' attempt' + (d.attempts > 1 ? 's' : '') + ')' : '') : '—';
}

function diffLines(before, after) {
  const out = [];
  const a = before.split('\n'), b = after.split('\n');
  for (const line of a) if (!b.includes(line)) out.push(el('div', {}, el('del', { text: '− ' + line })));
  for (const line of b) if (!a.includes(line)) out.push(el('div', {}, el('ins', { text: '+ ' + line })));
  return out.length ? out : [el('p', { text: 'No change to the terms.' })];
}

function termsText(t) {
  return ['Title: ' + t.title, 'Objective: ' + t.objective, ...(t.rules || []).map(r => 'Rule: ' + r)].join('\n');
}

async function agreementView(id) {
  heading('Agreement');
  const v = $('view');
  const live = el('p', { id: 'live', class: 'muted', 'aria-live': 'polite' });
  const summary = el('div', { id: 'summary' });
  const people = el('tbody', { id: 'participants' });
  const downloads = el('div', { id: 'downloads' });
  const amend = el('section', { id: 'amend', 'aria-labelledby': 'amend-h' });
  v.replaceChildren(summary, live,
    el('h2', { text: 'Participants' }),
    el('div', { class: 'scroll' }, el('table', {}, el('caption', { class: 'muted', text: 'Updates the moment the room changes.' }),
      el('thead', {}, el('tr', {}, ['Participant', 'State', 'Decision', 'Invitation email', 'Actions'].map(h => el('th', { scope: 'col', text: h })))), people)),
    el('h2', { text: 'Downloads' }), downloads, amend);
  let current = null;
  let urls = [];
  let record = null; // a record never changes once issued
  const render = async d => {
    current = d;
    heading(d.title);
    summary.replaceChildren(el('p', {}, 'Status ', el('strong', { id: 'outcome', text: d.outcome.status }), ' · revision ' + d.revisionNumber + ' · deadline ' + when(d.deadline) + ' · waits for ' + waitsFor(d)));
    // A keyboard user keeps their place when the room changes under them.
    const focused = people.contains(document.activeElement) ? document.activeElement : null;
    people.replaceChildren(...d.participants.map(p => {
      const actions = el('td');
      if (can('participants:manage') && !p.revoked && d.outcome.status === 'pending') {
        actions.append(
          el('button', { type: 'button', class: 'resend', 'data-name': p.displayName, onclick: async () => {
            if (!await confirmAction('Send a new invitation email to ' + p.displayName + ' (' + p.email + ')? Their previous link stops working.', 'Resend to ' + p.displayName)) return;
            try { await send('POST', 'invitations/' + p.invitationId + '/resend'); say('A new invitation to ' + p.displayName + ' is queued.'); } catch (e) { alertBox('Not resent: ' + e.message); }
          } }, 'Resend'), ' ',
          el('button', { type: 'button', class: 'revoke danger', 'data-name': p.displayName, onclick: async () => {
            if (!await confirmAction('Revoke ' + p.displayName + ' (' + p.email + ')? They can no longer read the room or decide, at once.', 'Revoke ' + p.displayName)) return;
            try { await send('POST', 'participants/' + p.participantId + '/revoke'); say(p.displayName + ' is revoked.'); } catch (e) { alertBox('Not revoked: ' + e.message); }
          } }, 'Revoke'));
      }
      return el('tr', { 'data-participant': p.displayName },
        el('td', {}, el('strong', { text: p.displayName }), el('br'), el('span', { class: 'muted', text: p.kind + (p.required ? ', required' : ', optional') + ' · ' + p.email })),
        el('td', { text: p.revoked ? 'revoked' : p.state }),
        el('td', { class: 'decision', text: p.decision || '—' }),
        el('td', { class: 'delivery', text: lastDelivery(p) }),
        actions);
    }));
    if (focused && !$('confirm').open) standIn(focused)?.focus();
    // Each download is a Blob of the exact bytes whose SHA-256 this page
    // computes and shows, next to the digest the service states.
    for (const u of urls) URL.revokeObjectURL(u);
    urls = [];
    const offer = async (bytes, type, name, id, label, stated) => {
      const sum = await sha256Hex(bytes);
      const url = URL.createObjectURL(new Blob([bytes], { type }));
      urls.push(url);
      return el('div', { class: 'download' },
        el('p', {}, el('a', { href: url, download: name, id: 'download-' + id, text: label })),
        el('p', {}, 'SHA-256 of these bytes, computed in this browser: ', el('span', { class: 'digest', id: id + '-sha', text: sum }),
          sum === stated ? el('span', { class: 'ok', text: ' (matches the service)' }) : el('span', { class: 'bad', text: ' (differs from the service)' })));
    };
    const parts = [await offer(new TextEncoder().encode(d.markdown), 'text/markdown; charset=utf-8', 'CONSENSUS.md', 'md',
      'Download CONSENSUS.md of revision ' + d.revisionNumber, d.markdownDigest.replace(/^sha256:/, ''))];
    if (d.outcome.status === 'pending') {
      parts.push(el('p', { id: 'record-pending', class: 'muted', text: 'The signed record can be downloaded once the outcome is final.' }));
    } else {
      if (!record) {
        try {
          const resp = await call('GET', 'agreements/' + id + '/record');
          record = { bytes: new Uint8Array(await resp.arrayBuffer()), stated: (resp.headers.get('ETag') || '').replace(/^"sha256-|"$/g, '') };
        } catch (e) { if (e.status === 401) throw e; }
      }
      parts.push(record
        ? await offer(record.bytes, 'application/json', 'consensus-record-' + id + '.json', 'record', 'Download the signed record (consensus-record/v1)', record.stated)
        : el('p', { class: 'bad', text: 'The signed record could not be read; reload to try again.' }));
    }
    downloads.replaceChildren(...parts);
    if (d.outcome.status !== 'pending') amend.replaceChildren();
    else if (!amend.hasChildNodes()) renderAmend();
  };
  const renderAmend = () => {
    if (!can('agreements:write') || current.outcome.status !== 'pending') return;
    const t = current.revision;
    const title = el('input', { id: 'amend-title', value: t.title });
    const objective = el('textarea', { id: 'amend-objective', rows: '3' });
    objective.value = t.objective;
    const rules = el('textarea', { id: 'amend-rules', rows: '3' });
    rules.value = (t.rules || []).join('\n');
    const diff = el('div', { id: 'amend-diff', 'aria-live': 'polite' });
    const form = el('form', {},
      el('div', { class: 'field' }, el('label', { for: 'amend-title', text: 'Title' }), title),
      el('div', { class: 'field' }, el('label', { for: 'amend-objective', text: 'Objective' }), objective),
      el('div', { class: 'field' }, el('label', { for: 'amend-rules', text: 'Rules, one a line' }), rules),
      el('button', { type: 'button', id: 'amend-review' }, 'Review the change'), diff);
    const next = () => ({ title: title.value.trim(), objective: objective.value.trim(), rules: rules.value.split('\n').map(s => s.trim()).filter(Boolean) });
    form.querySelector('#amend-review').addEventListener('click', () => {
      const decided = current.participants.filter(p => p.decision).map(p => p.displayName);
      const lock = el('button', { type: 'button', id: 'amend-lock' }, 'Lock revision ' + (current.revisionNumber + 1));
      lock.addEventListener('click', async () => {
        try { await send('POST', 'agreements/' + id + '/revisions', next()); say('Revision ' + (current.revisionNumber + 1) + ' is locked.'); amend.replaceChildren(); } catch (e) { alertBox('Not amended: ' + e.message); }
      });
      diff.replaceChildren(el('h3', { text: 'What changes' }), ...diffLines(termsText(t), termsText(next())),
        el('p', { id: 'stale', text: decided.length ? 'Decisions this makes stale (they were made on the current revision): ' + decided.join(', ') + '.' : 'No decision was made yet: none becomes stale.' }),
        lock);
    });
    amend.replaceChildren(el('h2', { id: 'amend-h', text: 'Amend' }), form);
  };
  // A held read: the service answers when the room changes (or after 25 s).
  let etag = '';
  for (;;) {
    let resp;
    try {
      resp = await call('GET', 'agreements/' + id, undefined, etag ? { 'If-None-Match': etag, Prefer: 'wait=25' } : {});
    } catch (e) {
      if (e.status === 401 || e.status === 404) { if (e.status === 404) alertBox('No such agreement.'); return; }
      live.textContent = 'Reconnecting…';
      await new Promise(r => setTimeout(r, 2000));
      continue;
    }
    const tag = resp.headers.get('ETag') || '';
    const d = await resp.json();
    if (tag !== etag) { await render(d); live.textContent = 'Up to date at ' + new Date().toLocaleTimeString(); }
    etag = tag;
  }
}

// -------------------------------------------------------------------- keys

const SCOPES = ['agreements:read', 'agreements:write', 'participants:manage', 'keys:manage', 'operators:manage', 'audit:read'];

async function keysView() {
  heading('API keys');
  const v = $('view');
  const list = el('div');
  const shown = el('div', { id: 'new-token', 'aria-live': 'polite' });
  const refresh = async () => {
    const { keys } = await get('keys');
    list.replaceChildren(table('Keys of this workspace; a token is shown only once, when its key is made.', ['Name', 'Scopes', 'Expires', 'Last used', 'State', 'Action'],
      keys.map(k => el('tr', { 'data-key': k.name },
        el('td', { text: k.name }), el('td', { text: k.scopes.join(' ') }), el('td', { text: k.expiresAt ? when(k.expiresAt) : 'never' }),
        el('td', { text: k.lastUsedAt ? when(k.lastUsedAt) : 'never' }), el('td', { text: k.revokedAt ? 'revoked' : 'active' }),
        el('td', {}, k.revokedAt ? '' : el('button', { type: 'button', class: 'danger revoke-key', onclick: async () => {
          if (!await confirmAction('Revoke the key ' + k.name + '? Anything using it is refused at once.', 'Revoke ' + k.name)) return;
          try { await send('DELETE', 'keys/' + k.id); say('The key ' + k.name + ' is revoked.'); await refresh(); } catch (e) { alertBox('Not revoked: ' + e.message); }
        } }, 'Revoke'))))));
  };
  const form = el('form', { id: 'key-form' },
    el('div', { class: 'field' }, el('label', { for: 'key-name', text: 'Name' }), el('input', { id: 'key-name', required: true, maxlength: '100' })),
    el('fieldset', {}, el('legend', { text: 'Scopes' }), SCOPES.map(s => el('div', { class: 'row' },
      el('input', { type: 'checkbox', id: 'scope-' + s.replace(':', '-'), value: s, checked: s === 'agreements:read' }), el('label', { for: 'scope-' + s.replace(':', '-'), text: s })))),
    el('div', { class: 'field' }, el('label', { for: 'key-expiry', text: 'Expires (optional)' }), el('input', { id: 'key-expiry', type: 'date' })),
    el('button', { type: 'submit', id: 'key-create' }, 'Create the key'));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    alertBox('');
    const exp = form.querySelector('#key-expiry').value;
    const body = { name: form.querySelector('#key-name').value.trim(), scopes: [...form.querySelectorAll('fieldset input:checked')].map(i => i.value) };
    if (exp) body.expiresAt = new Date(exp + 'T00:00:00Z').toISOString().replace(/\.\d+Z$/, 'Z');
    try {
      const k = await send('POST', 'keys', body);
      const copy = el('button', { type: 'button', id: 'copy-token' }, 'Copy the token');
      const out = el('output', { class: 'token', id: 'token-value', text: k.token });
      copy.addEventListener('click', async () => { await navigator.clipboard.writeText(k.token); say('The token is copied.'); });
      shown.replaceChildren(el('h2', { text: 'The token of ' + k.name }), el('p', { text: 'Store it now: it is shown this once and cannot be shown again. Leaving this page forgets it.' }), out, el('p', {}, copy));
      form.reset();
      await refresh();
      copy.focus();
    } catch (e) { alertBox('No key was made: ' + e.message); }
  });
  v.replaceChildren(shown, el('h2', { text: 'New key' }), form, el('h2', { text: 'Keys' }), list);
  await refresh();
}

// --------------------------------------------------------------- operators

async function operatorsView() {
  heading('Operators');
  const v = $('view');
  const list = el('div');
  const owner = can('operators:manage');
  const refresh = async () => {
    const { operators } = await get('operators');
    list.replaceChildren(table('Removed operators stay listed; their sessions ended when they were removed.', ['Operator', 'Role', 'Enrollment', 'State', 'Action'],
      operators.map(o => {
        let role = el('td', { text: o.role });
        if (owner && !o.removedAt && o.id !== session.operator.id) {
          const sel = el('select', { 'aria-label': 'Role of ' + o.email, class: 'role' }, ['owner', 'operator', 'viewer'].map(r => el('option', { value: r, text: r, selected: r === o.role })));
          sel.addEventListener('change', async () => {
            try { await send('PUT', 'operators/' + o.id + '/role', { role: sel.value }); say(o.email + ' is now ' + sel.value + '.'); } catch (e) { alertBox('Role not changed: ' + e.message); await refresh(); }
          });
          role = el('td', {}, sel);
        }
        return el('tr', { 'data-operator': o.email },
          el('td', {}, el('strong', { text: o.displayName || o.email }), el('br'), el('span', { class: 'muted', text: o.email })), role,
          el('td', { text: o.enrollment }), el('td', { text: o.removedAt ? 'removed ' + when(o.removedAt) : 'active' }),
          el('td', {}, owner && !o.removedAt && o.id !== session.operator.id ? el('button', { type: 'button', class: 'danger remove-operator', onclick: async () => {
            if (!await confirmAction('Remove ' + o.email + ' from ' + session.workspace + '? Their open consoles stop working at once.', 'Remove ' + o.email)) return;
            try { await send('DELETE', 'operators/' + o.id); say(o.email + ' is removed.'); await refresh(); } catch (e) { alertBox('Not removed: ' + e.message); }
          } }, 'Remove') : ''));
      })));
  };
  const parts = [];
  if (owner) {
    const form = el('form', { id: 'invite-form' },
      el('div', { class: 'field' }, el('label', { for: 'invite-email', text: 'Email' }), el('input', { id: 'invite-email', type: 'email', required: true })),
      el('div', { class: 'field' }, el('label', { for: 'invite-name', text: 'Name (optional)' }), el('input', { id: 'invite-name', maxlength: '100' })),
      el('div', { class: 'field' }, el('label', { for: 'invite-role', text: 'Role' }),
        el('select', { id: 'invite-role' }, el('option', { value: 'operator', text: 'operator: agreements and participants' }), el('option', { value: 'viewer', text: 'viewer: read only' }), el('option', { value: 'owner', text: 'owner: everything' }))),
      el('button', { type: 'submit', id: 'invite' }, 'Send the enrollment email'));
    form.addEventListener('submit', async ev => {
      ev.preventDefault();
      alertBox('');
      const body = { email: form.querySelector('#invite-email').value.trim(), displayName: form.querySelector('#invite-name').value.trim(), role: form.querySelector('#invite-role').value };
      try { await send('POST', 'operators', body); say('An enrollment email to ' + body.email + ' is queued.'); form.reset(); await refresh(); } catch (e) { alertBox('Not invited: ' + e.message); }
    });
    parts.push(el('h2', { text: 'Invite an operator' }), form);
  }
  v.replaceChildren(list, ...parts);
  await refresh();
}

// ------------------------------------------------------------------- audit

const ACTIONS = ['agreement.create', 'agreement.amend', 'participant.revoke', 'invitation.resend', 'key.create', 'key.revoke',
  'operator.invite', 'operator.role', 'operator.remove', 'operator.enroll', 'operator.signin', 'operator.signout',
  'workspace.create', 'operator.add', 'agreement.list', 'agreement.read', 'key.list', 'audit.read', 'operator.list', 'session.read'];

async function auditView() {
  heading('Audit log');
  const v = $('view');
  const params = new URLSearchParams(location.search);
  const limit = Math.min(Math.max(Number(params.get('limit')) || 50, 1), 1000);
  const f = {
    actor: el('input', { id: 'f-actor', name: 'actor', value: params.get('actor') || '' }),
    action: el('input', { id: 'f-action', name: 'action', list: 'actions', value: params.get('action') || '' }),
    agreementId: el('input', { id: 'f-agreement', name: 'agreementId', value: params.get('agreementId') || '', spellcheck: 'false' }),
  };
  const body = el('tbody');
  const count = el('caption', { class: 'muted' });
  const more = el('button', { type: 'button', id: 'audit-more', hidden: true }, 'Show older entries');
  let shown = 0, before = null;
  const row = e => el('tr', {}, el('td', { text: when(e.at) }), el('td', { text: e.actor.name + ' (' + e.actor.kind + ')' }), el('td', { text: e.action }),
    el('td', { text: Object.entries(e.targets).map(([k, x]) => k + ' ' + x).join(', ') }), el('td', { text: e.result }));
  // The service filters and pages: each request asks for the next page of
  // matching entries, newest first.
  const load = async reset => {
    const q = new URLSearchParams({ order: 'newest', limit: String(limit) });
    for (const [k, input] of Object.entries(f)) if (input.value.trim()) q.set(k, input.value.trim());
    if (!reset && before) q.set('before', String(before));
    const page = await get('audit?' + q);
    if (reset) { body.replaceChildren(); shown = 0; }
    body.append(...page.entries.map(row));
    shown += page.entries.length;
    before = page.nextBefore || null;
    more.hidden = !before;
    count.textContent = shown ? shown + (before ? ' matching entries so far, newest first; older ones follow on request' : ' matching entries, newest first') : 'No entry matches.';
  };
  const form = el('form', { class: 'row', role: 'search', id: 'audit-filter', 'aria-label': 'Filter the audit log' },
    el('div', { class: 'field' }, el('label', { for: 'f-actor', text: 'Actor (id or part of the name)' }), f.actor),
    el('div', { class: 'field' }, el('label', { for: 'f-action', text: 'Action' }), f.action),
    el('datalist', { id: 'actions' }, ACTIONS.map(a => el('option', { value: a }))),
    el('div', { class: 'field' }, el('label', { for: 'f-agreement', text: 'Agreement id' }), f.agreementId),
    el('button', { type: 'submit', id: 'audit-apply' }, 'Filter'),
    el('button', { type: 'button', id: 'audit-clear', onclick: () => { for (const input of Object.values(f)) input.value = ''; run(); } }, 'Clear'));
  const run = async () => {
    alertBox('');
    const q = new URLSearchParams();
    for (const [k, input] of Object.entries(f)) if (input.value.trim()) q.set(k, input.value.trim());
    if (params.get('limit')) q.set('limit', String(limit));
    history.replaceState(null, '', '/console/audit' + (q.size ? '?' + q : ''));
    try { await load(true); say(count.textContent); } catch (e) { if (e.status !== 401) alertBox('The filter was refused: ' + e.message); }
  };
  form.addEventListener('submit', ev => { ev.preventDefault(); run(); });
  more.addEventListener('click', async () => {
    const first = body.children.length;
    try { await load(false); } catch (e) { if (e.status !== 401) alertBox(e.message); return; }
    // Keep the keyboard's place: focus the first of the rows just added.
    const next = body.children[first];
    if (next) { next.setAttribute('tabindex', '-1'); next.focus(); }
  });
  v.replaceChildren(form, el('div', { class: 'scroll' }, el('table', { id: 'audit' }, count,
    el('thead', {}, el('tr', {}, ['When', 'Actor', 'Action', 'Targets', 'Result'].map(h => el('th', { scope: 'col', text: h })))), body)), more);
  await load(true);
}

// -------------------------------------------------------------------- main

async function main() {
  const path = location.pathname.replace(/\/$/, '');
  $('signout').addEventListener('click', async () => {
    try { await send('POST', 'signout'); } catch (e) { /* gone already */ }
    session = null;
    location.assign('/console/signin');
  });
  if (path === '/console/enroll') return enrollView();
  if (path === '/console/signin') return signinView();
  try {
    session = await (await fetch('/console/api/session', { credentials: 'same-origin', cache: 'no-store' }).then(async r => { if (!r.ok) throw await problem(r); return r; })).json();
  } catch (e) {
    if (e.status === 401) { location.replace('/console/signin'); return; }
    alertBox('The console could not reach the service: ' + e.message);
    return;
  }
  $('who').textContent = '· ' + (session.operator.displayName || session.operator.email) + ' (' + session.operator.role + ') in ' + session.workspace;
  for (const a of document.querySelectorAll('#nav [data-scope]')) if (!can(a.dataset.scope)) a.parentElement.remove();
  $('nav').hidden = false;
  const m = /^\/console\/agreements\/([0-9a-f-]{36})$/.exec(path);
  try {
    if (m) await agreementView(m[1]);
    else if (path === '/console/new' && can('agreements:write')) newView();
    else if (path === '/console/keys' && can('keys:manage')) await keysView();
    else if (path === '/console/operators') await operatorsView();
    else if (path === '/console/audit' && can('audit:read')) await auditView();
    else await agreementsView();
  } catch (e) {
    if (e.status !== 401) alertBox(e.message);
  }
}

main();

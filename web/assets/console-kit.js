// The console's shared parts: elements, the calls to the console API (each
// checks the answer's status and turns a refusal into a Problem carrying
// the service's own words), the status line, confirmations, tables that
// become cards on a phone, and times. The session is kept here, in this
// page's memory only.
export const $ = id => document.getElementById(id);
/** The signed-in session (operator, workspace, scopes, CSRF token), or null. */
export const state = { session: null };

/** An element with attributes and children (strings become text). */
export function el(tag, attrs = {}, ...children) {
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

export class Problem extends Error {
  constructor(status, code, detail) { super(detail || code || ('HTTP ' + status)); this.status = status; this.code = code; }
}

export function say(text) { $('status').textContent = text; }
export function alertBox(text) {
  const a = $('alert');
  a.textContent = text || '';
  a.hidden = !text;
}

/** The refusal an answer carries, in the service's own words when it has any. */
export async function problem(resp) {
  let code = '', detail = '';
  try { const p = await resp.json(); code = p.code || ''; detail = p.detail || p.title || ''; } catch (e) { /* not a problem */ }
  return new Problem(resp.status, code, detail || 'the service answered ' + resp.status + ' ' + (resp.statusText || ''));
}

/**
 * fetch, for every request of the console: a request that does not reach
 * the service, and an answer that is not a success, become a Problem.
 */
export async function request(url, init) {
  let resp;
  try { resp = await fetch(url, { credentials: 'same-origin', cache: 'no-store', ...init }); } catch (e) {
    throw new Problem(0, 'network', 'the service could not be reached (' + e.message + ')');
  }
  if (!resp.ok) throw await problem(resp);
  return resp;
}

/** POSTs JSON to a ceremony's route (no session yet: no CSRF token). */
export async function ceremony(path, body) {
  const init = { method: 'POST', headers: {} };
  if (body !== undefined) { init.headers['Content-Type'] = 'application/json'; init.body = JSON.stringify(body); }
  return (await request('/console/api/' + path, init)).json();
}

/** Calls the console API; a change carries the CSRF token. */
export async function call(method, path, body, headers = {}) {
  const h = { ...headers };
  if (method !== 'GET' && state.session) h['X-Consensus-CSRF'] = state.session.csrfToken;
  const init = { method, headers: h };
  if (body !== undefined) { h['Content-Type'] = 'application/json'; init.body = JSON.stringify(body); }
  try {
    return await request('/console/api/' + path, init);
  } catch (e) {
    if (e.status === 401 && state.session) { signedOut(); throw new Problem(401, 'unauthorized', 'Your session ended. Sign in again.'); }
    throw e;
  }
}
export async function get(path) { return (await call('GET', path)).json(); }
export async function send(method, path, body) {
  const resp = await call(method, path, body);
  return resp.status === 204 ? null : resp.json();
}

export function signedOut() {
  state.session = null;
  $('nav').hidden = true;
  $('who').textContent = '';
  const v = $('view');
  v.replaceChildren(el('p', { text: 'You are signed out: your session ended or was ended by an owner.' }),
    el('p', {}, el('a', { href: '/console/signin', text: 'Sign in again' })));
  heading('Signed out');
}

export function heading(text) {
  $('heading').textContent = text;
  document.title = text + ' · Consensus console';
}

export function can(scope) { return !!state.session && state.session.scopes.includes(scope); }

/**
 * The element that now stands where el stood: el while it is in the page,
 * else the button of the same class and name that a live re-render put in
 * its place (null when there is none).
 */
export function standIn(el) {
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
export function confirmAction(text, yes) {
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

/**
 * Makes a table a list of cards on a narrow screen (console.css): each
 * cell is labelled with its column's heading, now and whenever its rows
 * are replaced, so every value and action stays on screen with its name.
 */
export function cards(t) {
  t.classList.add('cards');
  const label = () => {
    const heads = [...t.querySelectorAll('thead th')].map(th => th.textContent);
    for (const tr of t.tBodies[0]?.rows || []) {
      [...tr.cells].forEach((td, i) => { if (heads[i] && td.colSpan === 1) td.setAttribute('data-label', heads[i]); });
    }
  };
  label();
  new MutationObserver(label).observe(t, { childList: true, subtree: true });
  return t;
}

export function table(caption, head, rows) {
  return el('div', { class: 'scroll' }, cards(el('table', {},
    el('caption', { class: 'muted', text: caption }),
    el('thead', {}, el('tr', {}, head.map(h => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, rows))));
}

/** A time as the service records it, in UTC, to the second. */
export function when(s) {
  if (!s) return '';
  const d = new Date(s);
  return isNaN(d) ? s : d.toISOString().slice(0, 19).replace('T', ' ') + ' UTC';
}



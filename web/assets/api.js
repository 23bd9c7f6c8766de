// The human API of one invitation, and the tab's memory of its credentials.
// Credentials travel only in a JSON body or the Authorization header, never
// in a URL; they are kept only in sessionStorage, so closing the tab forgets
// them.

const PREFIX = '/api/v1/human/invitations/';

/** An answer other than success: the HTTP status and the problem code. */
export class ApiError extends Error {
  constructor(status, code, detail) {
    super(detail || code || ('HTTP ' + status));
    this.status = status;
    this.code = code || '';
  }
}

/** The invitation id of this page's path, or '' when it is not one. */
export function invitationIdFromPath(pathname) {
  const m = /^\/invite\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/.exec(pathname);
  return m ? m[1] : '';
}

/** A key for Idempotency-Key: random, within [A-Za-z0-9._:-]{8,128}. */
export function newKey() {
  return 'web-' + crypto.randomUUID();
}

async function call(id, action, { method = 'GET', scheme, token, body, headers = {}, signal } = {}) {
  const h = { ...headers };
  if (scheme && token) h.Authorization = scheme + ' ' + token;
  const init = { method, headers: h, cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer', signal };
  if (body !== undefined) {
    h['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(PREFIX + id + '/' + action, init);
  } catch (e) {
    if (signal && signal.aborted) throw new ApiError(0, 'aborted', 'replaced by a newer request');
    throw new ApiError(0, 'network', 'The service could not be reached. Check your connection; the page will try again.');
  }
  return resp;
}

async function fail(resp) {
  let code = '', detail = '';
  try {
    const p = await resp.json();
    code = typeof p.code === 'string' ? p.code : '';
    detail = typeof p.detail === 'string' ? p.detail : '';
  } catch (e) { /* not a problem document */ }
  return new ApiError(resp.status, code, detail);
}

async function json(resp) {
  if (!resp.ok) throw await fail(resp);
  return resp.json();
}

/** Trades the fragment secret for a session and the locked revision. */
export async function exchange(id, secret) {
  return json(await call(id, 'exchange', { method: 'POST', body: { secret } }));
}

/** Claims the slot with the proof code from the email. */
export async function claim(id, session, emailProof) {
  return json(await call(id, 'claim', { method: 'POST', scheme: 'Consensus-Session', token: session, body: { emailProof } }));
}

/**
 * Reads the room. With an etag and wait seconds, the service holds the read
 * until the room changes or the wait ends (Prefer: wait). Resolves to
 * { room, etag, held }: room is null when nothing changed since etag; held
 * says the service applied the wait, so the next read may follow at once.
 */
export async function room(id, token, etag, { wait = 0, signal } = {}) {
  const headers = etag ? { 'If-None-Match': etag } : {};
  if (etag && wait > 0) headers.Prefer = 'wait=' + wait;
  const resp = await call(id, 'room', { scheme: 'Consensus-Participant', token, headers, signal });
  const held = /^wait=\d+$/.test(resp.headers.get('Preference-Applied') || '');
  if (resp.status === 304) return { room: null, etag, held };
  const body = await json(resp);
  return { room: body, etag: resp.headers.get('ETag') || '', held };
}

/** Posts one event under an idempotency key. */
export async function postEvent(id, token, key, action, body, revision, digest) {
  const resp = await call(id, 'events', {
    method: 'POST', scheme: 'Consensus-Participant', token, headers: { 'Idempotency-Key': key },
    body: { action, body, revision, digest },
  });
  return json(resp);
}

/** Downloads CONSENSUS.md: its exact bytes and the digest the server states. */
export async function artifact(id, token) {
  const resp = await call(id, 'artifact', { scheme: 'Consensus-Participant', token });
  if (!resp.ok) throw await fail(resp);
  const bytes = new Uint8Array(await resp.arrayBuffer());
  return { bytes, stated: resp.headers.get('X-Consensus-SHA256') || '' };
}

/** Lowercase hex SHA-256 of bytes (a Uint8Array or an ArrayBuffer). */
export async function sha256Hex(bytes) {
  const sum = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(sum, b => b.toString(16).padStart(2, '0')).join('');
}

/**
 * RFC 8785 canonical JSON of a value made of objects, arrays, strings,
 * integers, booleans and null (all a locked revision holds): keys sorted by
 * UTF-16 code units, which is what Array.prototype.sort does, and strings as
 * JSON.stringify writes them.
 */
export function canonicalJSON(v) {
  if (Array.isArray(v)) return '[' + v.map(canonicalJSON).join(',') + ']';
  if (v !== null && typeof v === 'object') {
    return '{' + Object.keys(v).sort().map(k => JSON.stringify(k) + ':' + canonicalJSON(v[k])).join(',') + '}';
  }
  return JSON.stringify(v);
}

/** The tab's record of one invitation: session and participant tokens. */
export class Memory {
  constructor(id) { this.key = 'consensus:' + id; }
  load() {
    try { return JSON.parse(sessionStorage.getItem(this.key) || '{}') || {}; } catch (e) { return {}; }
  }
  save(v) { sessionStorage.setItem(this.key, JSON.stringify(v)); }
  forget() { sessionStorage.removeItem(this.key); }
}

// What an agreement's page shows of the room: the locked terms of every
// revision with their digests, the conversation as the participants read
// it (each message marked as its participant's text, never the
// service's), and the outcome's files, each offered as the exact bytes
// whose SHA-256 this page computes beside the one the service states.
import { sha256Hex } from './api.js';
import { el, call, when } from './console-kit.js';

const bare = d => (d || '').replace(/^sha256:/, '');

function ruleText(r) {
  const agree = r && (r.agree || r.Agree);
  return r && (r.type === 'quorum' || agree) ? 'a quorum: ' + agree + ' of the required participants agree' : 'every required participant agrees';
}

/** Every locked revision, newest first; the current one open. */
export function termsSection(d) {
  const revs = [...(d.revisions || [])].reverse();
  return revs.map(r => {
    let t = {};
    try { t = JSON.parse(typeof r.canonicalRevision === 'string' ? r.canonicalRevision : JSON.stringify(r.canonicalRevision)); } catch (e) { /* shown empty */ }
    const row = (k, v, cls) => [el('dt', { text: k }), el('dd', { class: cls, text: v })];
    return el('details', { class: 'terms', id: 'terms-' + r.number, open: r.number === d.revisionNumber },
      el('summary', { text: 'Revision ' + r.number + (r.number === d.revisionNumber ? ' (current)' : '') + ', locked ' + when(r.lockedAt) }),
      el('dl', {},
        row('Title', t.title || ''),
        row('Objective', t.objective || '', 'objective'),
        el('dt', { text: 'Rules' }), el('dd', {}, (t.rules || []).length ? el('ul', { class: 'rules' }, t.rules.map(x => el('li', { text: x }))) : 'none'),
        row('Decision rule', ruleText(t.decision_rule)),
        row('Deadline', when(t.deadline)),
        row('Revision digest', bare(r.revisionDigest), 'digest'),
        row('Markdown digest', bare(r.markdownDigest), 'digest'),
        row('Terms digest', bare(r.termsDigest), 'digest')));
  });
}

const ACTION = { comment: 'commented', question: 'asked', change_request: 'asked for a change', agree: 'agreed', disagree: 'disagreed', abstain: 'abstained' };

/** The conversation, oldest first, as the participants' room lists it. */
export function conversation(d) {
  if (!(d.events || []).length) return [el('p', { class: 'muted', id: 'no-events', text: 'Nobody has written yet.' })];
  const names = Object.fromEntries(d.events.map(e => [e.id, e.displayName]));
  return [el('ol', { class: 'events', id: 'events' }, d.events.map(e => el('li', { 'data-event': e.seq, 'data-action': e.action },
    el('p', { class: 'meta' }, el('strong', { text: e.displayName || 'a participant' }), ' (' + (e.kind === 'agent' ? 'agent' : 'person') + ') ' +
      (ACTION[e.action] || e.action) + ' on revision ' + e.revision + ' · ' + when(e.createdAt) +
      (e.inReplyTo ? ' · answering ' + (names[e.inReplyTo] || 'an earlier message') : '') + (e.evidence ? ' · by replying to the invitation email' : '')),
    e.body ? el('blockquote', { class: 'said', 'aria-label': 'Written by ' + (e.displayName || 'a participant') + ', not by the service', text: e.body }) : ''))),
  el('p', { class: 'muted', text: 'Each message is its participant\'s own text, shown as the participants read it; the service wrote none of it.' })];
}

/**
 * The outcome's files: CONSENSUS.md once reached and the signed record
 * once final, each fetched from the console's twin of the participants'
 * route and offered as a Blob of those bytes. cache keeps what was read
 * (neither file changes once made); urls collects the Blob URLs to free.
 */
export async function outcomeFiles(d, cache, urls) {
  const offer = async (bytes, type, name, id, label, stated) => {
    const sum = await sha256Hex(bytes);
    const url = URL.createObjectURL(new Blob([bytes], { type }));
    urls.push(url);
    return el('div', { class: 'download' },
      el('p', {}, el('a', { href: url, download: name, id: 'download-' + id, text: label })),
      el('p', {}, 'SHA-256 of these bytes, computed in this browser: ', el('span', { class: 'digest', id: id + '-sha', text: sum }),
        sum === stated ? el('span', { class: 'ok', text: ' (matches the service)' }) : el('span', { class: 'bad', text: ' (differs from the service: ' + stated + ')' })));
  };
  const read = async (key, path) => {
    if (!cache[key]) {
      try {
        const resp = await call('GET', 'agreements/' + d.agreementId + '/' + path);
        cache[key] = { bytes: new Uint8Array(await resp.arrayBuffer()), stated: (resp.headers.get('ETag') || '').replace(/^"sha256-|"$/g, '') };
      } catch (e) { if (e.status === 401) throw e; }
    }
    return cache[key];
  };
  const parts = [];
  if (d.outcome.status === 'pending') {
    parts.push(el('p', { id: 'record-pending', class: 'muted', text: 'CONSENSUS.md and the signed record can be downloaded once the outcome is final.' }));
  } else {
    if (d.outcome.status === 'reached') {
      const md = await read('md', 'artifact');
      parts.push(md ? await offer(md.bytes, 'text/markdown; charset=utf-8', 'CONSENSUS.md', 'md', 'Download CONSENSUS.md, the outcome (what the participants download)', d.consensus?.sha256 || md.stated)
        : el('p', { class: 'bad', text: 'CONSENSUS.md could not be read; reload to try again.' }));
    } else {
      parts.push(el('p', { class: 'muted', id: 'no-consensus', text: 'No CONSENSUS.md: it is written only when the outcome is reached, and this one is ' + d.outcome.status + '.' }));
    }
    const rec = await read('record', 'record');
    parts.push(rec ? await offer(rec.bytes, 'application/json', 'consensus-record-' + d.agreementId + '.json', 'record', 'Download the signed record (consensus-record/v1)', d.record?.sha256 || rec.stated)
      : el('p', { class: 'bad', text: 'The signed record could not be read; reload to try again.' }));
  }
  // The revision's own text: what its markdown digest covers, not the outcome.
  parts.push(await offer(new TextEncoder().encode(d.markdown), 'text/markdown; charset=utf-8', 'revision-' + d.revisionNumber + '.md', 'revision',
    'Download the text of revision ' + d.revisionNumber + ' (revision-' + d.revisionNumber + '.md, the terms its markdown digest covers)', bare(d.markdownDigest)));
  return parts;
}

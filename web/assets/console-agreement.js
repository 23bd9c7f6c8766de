// One agreement: the form that creates it (after a dry run whose digest
// this page recomputes), and its page: the outcome, the participants, the
// locked terms of every revision, the conversation as the participants
// read it, the amendment form, and once final the outcome's CONSENSUS.md
// and signed record with the SHA-256 of the bytes offered.
import { sha256Hex, canonicalJSON } from './api.js';
import { $, el, say, alertBox, call, send, heading, can, standIn, confirmAction, cards, when } from './console-kit.js';
import { termsSection, conversation, outcomeFiles } from './console-room.js';

function waitsFor(d) {
  if (d.outcome.status !== 'pending') return 'nothing: the outcome is final';
  const open = d.participants.filter(p => p.required && !p.revoked && !p.decision).map(p => p.displayName);
  return open.length ? open.join(', ') : 'the decision rule';
}

function participantRow(i) {
  const id = n => 'p' + i + '-' + n;
  return el('fieldset', { class: 'participant', 'data-row': String(i) },
    el('legend', { text: 'Participant ' + (i + 1) }),
    el('div', { class: 'field' }, el('label', { for: id('name'), text: 'Name' }), el('input', { id: id('name'), name: 'displayName', required: true, maxlength: '100' })),
    el('div', { class: 'field' }, el('label', { for: id('email'), text: 'Email' }), el('input', { id: id('email'), name: 'email', type: 'email', required: true })),
    el('div', { class: 'field' }, el('label', { for: id('kind'), text: 'Kind' }),
      el('select', { id: id('kind'), name: 'kind' }, el('option', { value: 'human', text: 'person' }), el('option', { value: 'agent', text: 'agent' }))),
    el('div', { class: 'check' }, el('input', { id: id('required'), name: 'required', type: 'checkbox', checked: true }), el('label', { for: id('required'), text: 'Required: the outcome waits for this participant' })));
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

export function newView() {
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
    el('div', { class: 'field', id: 'quorum-field', hidden: true }, el('label', { for: 'agree', text: 'Quorum: how many must agree' }), el('input', { id: 'agree', type: 'number', min: '1', value: '1' })),
    el('h2', { text: 'Participants' }), rows,
    el('div', { class: 'row' },
      el('button', { type: 'button', id: 'add-participant', onclick: () => { const r = participantRow(rows.children.length); rows.append(r); r.querySelector('input').focus(); } }, 'Add a participant'),
      el('button', { type: 'submit', id: 'dry-run' }, 'Preview the revision')),
    preview);
  // The quorum's number means something only under the quorum rule.
  form.querySelector('#rule').addEventListener('change', e => { form.querySelector('#quorum-field').hidden = e.target.value !== 'quorum'; });
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

export async function agreementView(id) {
  heading('Agreement');
  const v = $('view');
  const live = el('p', { id: 'live', class: 'muted', 'aria-live': 'polite' });
  const summary = el('div', { id: 'summary' });
  const people = el('tbody', { id: 'participants' });
  const terms = el('div', { id: 'terms' });
  const talk = el('div', { id: 'conversation' });
  const downloads = el('div', { id: 'downloads' });
  const amend = el('section', { id: 'amend', 'aria-labelledby': 'amend-h' });
  v.replaceChildren(summary, live,
    el('h2', { text: 'Participants' }),
    el('div', { class: 'scroll' }, cards(el('table', {}, el('caption', { class: 'muted', text: 'Updates the moment the room changes.' }),
      el('thead', {}, el('tr', {}, ['Participant', 'State', 'Decision', 'Invitation email', 'Actions'].map(h => el('th', { scope: 'col', text: h })))), people))),
    el('h2', { text: 'Terms' }), terms,
    el('h2', { text: 'Conversation' }), talk,
    el('h2', { text: 'Downloads' }), downloads, amend);
  let current = null;
  let urls = [];
  const files = {}; // neither file changes once made
  const render = async d => {
    current = d;
    heading(d.title);
    summary.replaceChildren(el('p', {}, 'Status ', el('strong', { id: 'outcome', text: d.outcome.status }), ' · revision ' + d.revisionNumber + ' · deadline ' + when(d.deadline) +
      (d.outcome.status === 'pending' ? ' · waits for ' + waitsFor(d) : d.outcome.decidedAt ? ' · final since ' + when(d.outcome.decidedAt) : ' · final')));
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
    const open = new Set([...terms.querySelectorAll('details[open]')].map(x => x.id));
    terms.replaceChildren(...termsSection(d));
    if (open.size) for (const x of terms.querySelectorAll('details')) x.open = open.has(x.id) || x.id === 'terms-' + d.revisionNumber;
    talk.replaceChildren(...conversation(d));
    const old = urls;
    urls = [];
    downloads.replaceChildren(...await outcomeFiles(d, files, urls));
    for (const u of old) URL.revokeObjectURL(u);
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


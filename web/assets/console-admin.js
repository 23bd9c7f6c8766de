// The workspace's lists: its agreements (held open on the service, so
// they update the moment anything changes), API keys, operators and audit
// log.
import { $, state, el, say, alertBox, call, get, send, heading, can, confirmAction, table, cards, when } from './console-kit.js';

/** What a pending agreement waits for; a final one waits for nothing. */
export function waits(status, names) {
  if (status !== 'pending') return 'nothing: the outcome is final';
  return names.length ? names.join(', ') : 'the decision rule';
}

export async function agreementsView() {
  heading('Agreements');
  const v = $('view');
  const body = el('tbody');
  const live = el('p', { id: 'list-live', class: 'muted' });
  v.replaceChildren(
    can('agreements:write') ? el('p', {}, el('a', { href: '/console/new', text: 'New agreement' })) : '',
    el('div', { class: 'scroll' }, cards(el('table', {}, el('caption', { class: 'muted', text: 'Newest first; updates the moment anything in the workspace changes.' }),
      el('thead', {}, el('tr', {}, ['Title', 'Status', 'Waits for', 'Deadline'].map(h => el('th', { scope: 'col', text: h })))), body))),
    live);
  const render = page => {
    body.replaceChildren(...page.agreements.map(a => el('tr', { 'data-agreement': a.agreementId },
      el('td', {}, el('a', { href: '/console/agreements/' + a.agreementId, text: a.title })),
      el('td', { class: 'status', text: a.outcome.status }),
      el('td', { class: 'waits', text: waits(a.outcome.status, a.waitsFor) }),
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

// -------------------------------------------------------------------- keys

const SCOPES = ['agreements:read', 'agreements:write', 'participants:manage', 'keys:manage', 'operators:manage', 'audit:read'];

export async function keysView() {
  heading('API keys');
  const v = $('view');
  const list = el('div');
  const shown = el('div', { id: 'new-token', 'aria-live': 'polite' });
  const refresh = async () => {
    const { keys } = await get('keys');
    if (!keys.length) { list.replaceChildren(el('p', { id: 'no-key', text: 'No key yet. A key lets a program use the operator API; its token is shown once, when it is made.' })); return; }
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
      // The focus moves in the same task that shows the token, so nothing
      // typed in between lands elsewhere; the list refreshes after.
      copy.focus();
      form.reset();
      await refresh();
    } catch (e) { alertBox('No key was made: ' + e.message); }
  });
  v.replaceChildren(shown, el('h2', { text: 'New key' }), form, el('h2', { text: 'Keys' }), list);
  await refresh();
}

// --------------------------------------------------------------- operators

export async function operatorsView() {
  heading('Operators');
  const v = $('view');
  const list = el('div');
  const owner = can('operators:manage');
  const refresh = async () => {
    const { operators } = await get('operators');
    list.replaceChildren(table('Removed operators stay listed; their sessions ended when they were removed.', ['Operator', 'Role', 'Enrollment', 'State', 'Action'],
      operators.map(o => {
        let role = el('td', { text: o.role });
        if (owner && !o.removedAt && o.id !== state.session.operator.id) {
          const sel = el('select', { 'aria-label': 'Role of ' + o.email, class: 'role' }, ['owner', 'operator', 'viewer'].map(r => el('option', { value: r, text: r, selected: r === o.role })));
          sel.addEventListener('change', async () => {
            try { await send('PUT', 'operators/' + o.id + '/role', { role: sel.value }); say(o.email + ' is now ' + sel.value + '.'); } catch (e) { alertBox('Role not changed: ' + e.message); await refresh(); }
          });
          role = el('td', {}, sel);
        }
        return el('tr', { 'data-operator': o.email },
          el('td', {}, el('strong', { text: o.displayName || o.email }), el('br'), el('span', { class: 'muted', text: o.email })), role,
          el('td', { text: o.enrollment }), el('td', { text: o.removedAt ? 'removed ' + when(o.removedAt) : 'active' }),
          el('td', {}, owner && !o.removedAt && o.id !== state.session.operator.id ? el('button', { type: 'button', class: 'danger remove-operator', onclick: async () => {
            if (!await confirmAction('Remove ' + o.email + ' from ' + state.session.workspace + '? Their open consoles stop working at once.', 'Remove ' + o.email)) return;
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
  'workspace.create', 'operator.add', 'agreement.list', 'agreement.read', 'key.list', 'audit.read', 'operator.list', 'session.read', 'operator.link', 'passkey.add', 'passkey.remove'];

export async function auditView() {
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
  v.replaceChildren(form, el('div', { class: 'scroll' }, cards(el('table', { id: 'audit' }, count,
    el('thead', {}, el('tr', {}, ['When', 'Actor', 'Action', 'Targets', 'Result'].map(h => el('th', { scope: 'col', text: h })))), body))), more);
  await load(true);
}


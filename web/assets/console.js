// The operators' console. One page shows the view its path names. The
// session is an HttpOnly cookie the page never sees; the CSRF token that
// every change carries is read from /console/api/session and kept in this
// page's memory only. Nothing is written to localStorage or sessionStorage,
// and no credential ever goes into a URL. Text from the service is only
// ever set as text (Trusted Types allow nothing else). The views live by
// job: console-access.js (enroll, sign in, passkeys), console-admin.js
// (the lists, keys, operators, audit), console-agreement.js and
// console-room.js (one agreement), console-kit.js (what they share).
import { $, state, alertBox, send, request, can } from './console-kit.js';
import { signinView, enrollView, passkeysView } from './console-access.js';
import { agreementsView, keysView, operatorsView, auditView } from './console-admin.js';
import { agreementView, newView } from './console-agreement.js';

/** A page the signed-in role may not use: say so, rather than show another. */
function notAllowed(what, scope) {
  alertBox('Your role (' + state.session.operator.role + ') cannot ' + what + ': it needs the scope ' + scope + ', which an owner can give by changing your role.');
  return agreementsView();
}

async function main() {
  const path = location.pathname.replace(/\/$/, '');
  $('signout').addEventListener('click', async () => {
    try { await send('POST', 'signout'); } catch (e) { /* gone already */ }
    state.session = null;
    location.assign('/console/signin');
  });
  if (path === '/console/enroll') return enrollView();
  if (path === '/console/signin') return signinView();
  try {
    state.session = await (await request('/console/api/session')).json();
  } catch (e) {
    if (e.status === 401) { location.replace('/console/signin'); return; }
    alertBox('The console could not reach the service: ' + e.message);
    return;
  }
  const s = state.session;
  $('who').textContent = '· ' + (s.operator.displayName || s.operator.email) + ' (' + s.operator.role + ') in ' + s.workspace;
  for (const a of document.querySelectorAll('#nav [data-scope]')) if (!can(a.dataset.scope)) a.parentElement.remove();
  $('nav').hidden = false;
  const m = /^\/console\/agreements\/([0-9a-f-]{36})$/.exec(path);
  try {
    if (m) await agreementView(m[1]);
    else if (path === '/console/new') await (can('agreements:write') ? newView() : notAllowed('create agreements', 'agreements:write'));
    else if (path === '/console/keys') await (can('keys:manage') ? keysView() : notAllowed('manage API keys', 'keys:manage'));
    else if (path === '/console/operators') await operatorsView();
    else if (path === '/console/passkeys') await passkeysView();
    else if (path === '/console/audit') await (can('audit:read') ? auditView() : notAllowed('read the audit log', 'audit:read'));
    else await agreementsView();
  } catch (e) {
    if (e.status !== 401) alertBox(e.message);
  }
}

main().catch(e => alertBox('The console failed: ' + e.message));

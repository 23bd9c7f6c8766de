// Getting in: enrolling with a link, signing in with a passkey, and an
// operator's own passkeys (add another, remove any but the last). Every
// refusal is shown in the service's own words: a wrong origin, a used,
// expired or withdrawn link, a cross-site request.
import { $, state, el, say, alertBox, ceremony, get, send, heading, table, when, confirmAction } from './console-kit.js';

/** A passkey ceremony the browser cannot run at all, in words. */
function browserRefusal(e) {
  if (e.name === 'NotAllowedError') return 'the browser or the passkey declined (it was cancelled, or timed out)';
  if (e.name === 'InvalidStateError') return 'this device already holds a passkey of yours for this console';
  return e.message;
}

async function signIn() {
  alertBox('');
  say('Waiting for your passkey…');
  const begin = await ceremony('signin/begin');
  let cred;
  try {
    cred = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(begin.publicKey) });
  } catch (e) { throw new Error(browserRefusal(e)); }
  state.session = await ceremony('signin/finish', { ceremonyId: begin.ceremonyId, credential: cred.toJSON() });
  location.assign('/console/agreements');
}

export function signinView() {
  heading('Sign in');
  const button = el('button', { type: 'button', id: 'signin' }, 'Sign in with a passkey');
  button.addEventListener('click', () => signIn().catch(e => { say(''); alertBox('Sign-in failed: ' + e.message); }));
  $('view').replaceChildren(
    el('p', { text: 'Operators sign in with the passkey they registered from their enrollment link. There is no password.' }),
    button);
}

export async function enrollView() {
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
    begin = await ceremony('enroll/begin', { token });
  } catch (e) {
    // The service says why: its detail names a used or expired link, a
    // wrong origin and the one to open, or a configuration to fix.
    const why = e.code === 'not-found'
      ? 'This enrollment link does not work: it is not a link this service issued, or it was withdrawn (a newer one replaces it). Ask an owner of your workspace for a new one.'
      : 'This enrollment link cannot be used here: ' + e.message;
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
      let cred;
      try {
        cred = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(begin.publicKey) });
      } catch (e) { throw new Error(browserRefusal(e)); }
      await ceremony('enroll/finish', { ceremonyId: begin.ceremonyId, token, displayName: name.value.trim(), credential: cred.toJSON() });
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

/** The signed-in operator's passkeys: add one on this device, remove one. */
export async function passkeysView() {
  heading('Your passkeys');
  const list = el('div');
  const refresh = async () => {
    const { passkeys } = await get('passkeys');
    list.replaceChildren(table('The passkeys that sign you in; keep at least two, on different devices. The last one cannot be removed.', ['Passkey', 'Registered', 'Last sign-in', 'Action'],
      passkeys.map((p, i) => el('tr', { 'data-passkey': p.id },
        el('td', { class: 'digest', text: 'Passkey ' + (i + 1) + ' · ' + p.id.slice(0, 12) + '…' }), el('td', { text: when(p.createdAt) }),
        el('td', { text: p.lastUsedAt ? when(p.lastUsedAt) : 'never' }),
        el('td', {}, passkeys.length > 1 ? el('button', { type: 'button', class: 'danger remove-passkey', 'data-name': p.id, onclick: async () => {
          if (!await confirmAction('Remove passkey ' + (i + 1) + '? It no longer signs you in; your other passkeys still do.', 'Remove passkey ' + (i + 1))) return;
          try { await send('DELETE', 'passkeys/' + encodeURIComponent(p.id)); say('Passkey ' + (i + 1) + ' is removed.'); await refresh(); } catch (e) { alertBox('Not removed: ' + e.message); }
        } }, 'Remove') : el('span', { class: 'muted', text: 'your only passkey' }))))));
  };
  const add = el('button', { type: 'button', id: 'add-passkey' }, 'Add a passkey on this device');
  add.addEventListener('click', async () => {
    alertBox('');
    try {
      say('Waiting for your passkey…');
      const begin = await send('POST', 'passkeys/begin');
      let cred;
      try {
        cred = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(begin.publicKey) });
      } catch (e) { throw new Error(browserRefusal(e)); }
      await send('POST', 'passkeys/finish', { ceremonyId: begin.ceremonyId, credential: cred.toJSON() });
      say('The new passkey is registered.');
      await refresh();
    } catch (e) { say(''); alertBox('No passkey was added: ' + e.message); }
  });
  $('view').replaceChildren(list, el('p', {}, add));
  await refresh();
}

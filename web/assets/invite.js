// The invitation page: read the secret from the fragment and drop it from
// the address bar, exchange it, show the locked revision, claim with the
// proof code, then keep the room up to date until the outcome is final.
import * as api from './api.js';
import { $, el, fill, showOutcome, showEvents, characters, saveFile, showCounter, refusals, invalidLink, decisionNames } from './view.js';
import { say, show, warn, heading, trouble, proofError, showAgreement } from './invite-view.js';

const MAX_BODY = 4000;
const POLL_MS = 3000; // between reads the service did not hold
const POLL_IDLE_MS = 15000; // once final, or while the tab is hidden
const WAIT_S = 50; // a held read ends by itself within a minute

const id = api.invitationIdFromPath(location.pathname);
const memory = new api.Memory(id);
let state = memory.load(); // { session, exchanged, participantToken }
let room = null;
let etag = '';
let shownDigest = '';
let pollTimer = 0;
let reading = null; // the AbortController of the read in flight
let intent = null; // { action, body, key }: a command to retry under the same key
let lastSeq = -1;
let lastStatus = '';

// Read and remove the fragment before anything else runs: the secret must
// not stay in the address bar, the history or any later request.
let secret = '';
if (location.hash) {
  secret = new URLSearchParams(location.hash.slice(1)).get('secret') || '';
  history.replaceState(null, '', location.pathname);
}

function closedLink() {
  heading('This invitation cannot be opened');
  show();
  say('');
  warn(invalidLink);
  memory.forget();
}

async function start() {
  if (!id) { heading('This is not an invitation link'); show('nolink'); return; }
  if (secret) { await openWith(secret); return; }
  if (state.participantToken) { await enterRoom(); return; }
  if (state.session && state.exchanged && Date.parse(state.exchanged.sessionExpiresAt) > Date.now()) { showClaim(); return; }
  heading('Open the link from your invitation email');
  show('nolink');
}

async function openWith(s) {
  say('Opening your invitation…');
  let x;
  try {
    x = await api.exchange(id, s);
  } catch (e) {
    if (e.status === 404) { closedLink(); return; }
    trouble(e, () => openWith(s));
    return;
  }
  secret = '';
  const { sessionToken, ...exchanged } = x;
  state = { ...state, session: sessionToken, exchanged };
  memory.save(state);
  if (state.participantToken) { await enterRoom(); return; }
  showClaim();
}

async function showClaim() {
  const x = state.exchanged;
  await showAgreement(x.canonicalRevision, x, x.participant.participantId, x.revisions);
  show('agreement', 'claim');
  say('You are invited as ' + x.participant.displayName + '. Read the agreement, then claim your place with the proof code from the email.');
}

async function submitClaim(ev) {
  ev.preventDefault();
  warn('');
  const input = $('proof');
  const code = input.value.replace(/\s+/g, '');
  proofError('');
  if (!code) {
    proofError('Type or paste the proof code from your invitation email first.');
    input.focus();
    return;
  }
  if (!state.session) { heading('Open the link from your invitation email'); show('nolink'); return; }
  $('claim-submit').disabled = true;
  say('Checking the proof code…');
  try {
    const c = await api.claim(id, state.session, code);
    state = { participantToken: c.participantToken, exchanged: state.exchanged };
    memory.save(state);
    input.value = '';
    say('Your place is claimed.');
    await enterRoom();
    $('heading').focus(); // the form is gone: start reading the room from the top
  } catch (e) {
    say('');
    if (e.status === 403) {
      proofError('That proof code does not match this invitation. Copy it again from the same email; if the invitation was sent to you again, only the newest email\'s code works. Nothing was recorded.');
      input.focus();
    } else if (e.status === 401) {
      state = {};
      memory.forget();
      warn('This page was open too long: a place must be claimed within 20 minutes of opening the link. Open the link from your email again. Nothing was recorded.');
    } else if (e.status === 404) {
      closedLink();
    } else if (e.status === 400) {
      proofError('That does not look like a proof code. Copy the code printed in your invitation email, without anything around it.');
      input.focus();
    } else {
      trouble(e, () => $('claim-form').requestSubmit());
    }
  } finally {
    $('claim-submit').disabled = false;
  }
}

async function enterRoom() {
  show('outcome-section', 'room', 'agreement');
  $('main').append($('agreement')); // in the room, the text follows the decision
  say('Loading the room…');
  await refresh();
}

/**
 * Reads the room and schedules the next read. While the outcome is pending
 * and the tab visible, the read is held by the service until something
 * changes (Prefer: wait), and the next one follows at once; a newer read
 * (after posting, or when the tab shows again) replaces a held one.
 */
async function refresh() {
  clearTimeout(pollTimer);
  if (reading) reading.abort();
  const mine = new AbortController();
  reading = mine;
  const live = !document.hidden && (!room || room.outcome.status === 'pending');
  let held = false;
  try {
    const r = await api.room(id, state.participantToken, etag, { wait: live ? WAIT_S : 0, signal: mine.signal });
    held = r.held;
    if (r.room) {
      room = r.room;
      etag = r.etag;
      await render();
    }
    if ($('alert').dataset.kind === 'offline') warn('');
  } catch (e) {
    if (e.code === 'aborted') return; // a newer read took over
    if (e.status === 401) { lostAccess(); return; }
    if (e.status === 0 || e.status >= 500) {
      warn('The room could not be read just now; this page keeps trying.');
      $('alert').dataset.kind = 'offline';
    } else if (e.status !== 429) { // too many waiting reads: read without waiting for a while
      trouble(e);
    }
  } finally {
    if (reading === mine) reading = null;
  }
  if (reading) return; // a newer read schedules what follows
  const final = room && room.outcome.status !== 'pending';
  pollTimer = setTimeout(refresh, final || document.hidden ? POLL_IDLE_MS : held ? 0 : POLL_MS);
}

function lostAccess() {
  clearTimeout(pollTimer);
  if (reading) reading.abort();
  state = {};
  memory.forget();
  heading('Your access to this agreement has ended');
  show();
  warn('This page no longer has access to the room: the operator has revoked your place in this agreement, ' +
    'or your access stopped being valid. Nothing more can be recorded from here. If you think this is a mistake, ' +
    'contact the person who invited you.');
  say('');
}

async function render() {
  const rev = room.revision;
  if (rev.revisionDigest !== shownDigest) {
    await showAgreement(rev.canonicalRevision, rev, room.you.participantId, room.revisions || (state.exchanged && state.exchanged.revisions));
    shownDigest = rev.revisionDigest;
  }
  showOutcome(room);
  showEvents(room);
  const me = room.roster.find(p => p.participantId === room.you.participantId);
  const final = room.outcome.status !== 'pending';
  const lines = [];
  if (me) lines.push(el('p', 'You take part as ' + me.displayName + (me.required ? ' (required).' : ' (optional: your decision is recorded but does not change the outcome).')));
  if (room.you.decision) lines.push(el('p', null, {}, 'Your decision is recorded: ', el('strong', room.you.decision), '. It is final.'));
  else if (final) lines.push(el('p', 'The outcome is final, so no decision can be recorded any more.'));
  else if (me && me.stale) lines.push(el('p', 'Your ' + me.decision + ' was recorded on revision ' + me.revision +
    '. The title, objective or rules have changed since, so it no longer counts: read this revision and decide again.'));
  else lines.push(el('p', 'You have not decided yet.'));
  lines.push(el('p', 'Your access is kept only in this browser tab. If you close it, open the link in your invitation email again.', { class: 'small muted' }));
  fill($('you'), lines);
  $('decide').hidden = Boolean(room.you.decision) || final;
  $('post-form').hidden = final || room.you.eventsRemaining === 0;
  const art = room.artifact;
  $('artifact').hidden = !art;
  if (art) $('artifact-sha').textContent = art.sha256;
  announce();
}

/** Tells the live region what changed since the last reading. */
function announce() {
  const status = room.outcome.status;
  // What others posted: one's own posts are announced when they are sent.
  const others = room.events.filter(e => e.participantId !== room.you.participantId);
  const newest = others.length ? others[others.length - 1].seq : 0;
  if (lastStatus && status !== lastStatus) say('The outcome is now ' + status + '.');
  else if (lastSeq >= 0 && newest > lastSeq) say('Something new was posted in the room.');
  else if (!lastStatus) say('The room is up to date; it refreshes by itself.');
  lastStatus = status;
  lastSeq = newest;
}

/** Posts one command; the key is kept until it is answered, so a retry is replayed, not doubled. */
async function send(action, body) {
  if (!intent || intent.action !== action || intent.body !== body) intent = { action, body, key: api.newKey() };
  const rev = room.revision;
  try {
    const out = await api.postEvent(id, state.participantToken, intent.key, action, body, rev.number, rev.revisionDigest);
    intent = null;
    return out;
  } catch (e) {
    if (e.status !== 0 && e.status < 500) intent = null;
    throw e;
  }
}

function refused(e) {
  if (e.status === 401) { lostAccess(); return; }
  if (refusals[e.code]) warn(refusals[e.code]);
  else if (e.status === 400) warn('The service could not accept this: ' + e.message);
  else trouble(e);
  etag = '';
  refresh();
}

function updateCounter() {
  const over = showCounter($('post-counter'), characters($('post-body').value), MAX_BODY);
  const c = $('post-counter');
  if (String(over) !== c.dataset.over) {
    if (over) say('Your message is longer than 4,000 characters.');
    c.dataset.over = String(over);
  }
}

async function submitPost(ev) {
  ev.preventDefault();
  warn('');
  const body = $('post-body').value;
  const n = characters(body);
  if (n === 0 || n > MAX_BODY) {
    warn(n === 0 ? 'Write a message first.' : 'A message can hold at most 4,000 characters; this one has ' + n.toLocaleString('en-US') + '.');
    $('post-body').focus();
    return;
  }
  $('post-submit').disabled = true;
  try {
    await send($('post-action').value, body);
    $('post-body').value = '';
    updateCounter();
    say('Your message was posted.');
    etag = '';
    await refresh();
  } catch (e) {
    if (e.status === 0 || e.status >= 500) trouble(e, () => $('post-form').requestSubmit());
    else refused(e);
  } finally {
    $('post-submit').disabled = false;
  }
}

let chosen = '';
let opener = null;

function askConfirm(ev) {
  const action = ev.target.dataset.action;
  if (!action || !room) return;
  chosen = action;
  opener = ev.target;
  const rev = room.revision;
  fill($('confirm-text'), [
    el('p', null, {}, 'You are about to record: ', el('strong', decisionNames[action]), '.'),
    el('p', 'On “' + rev.canonicalRevision.title + '”, revision ' + rev.number + ', whose revision digest is:'),
    el('p', rev.revisionDigest, { class: 'digest' }),
    el('p', null, {}, el('strong', 'This decision is final.'), ' It cannot be changed or withdrawn once recorded.'),
  ]);
  $('confirm-yes').textContent = 'Record: ' + decisionNames[action];
  $('confirm').showModal();
  $('confirm-no').focus();
}

async function confirmDecision() {
  $('confirm').close();
  $('confirm-yes').disabled = true;
  say('Recording your decision…');
  try {
    await send(chosen, '');
    say('Your decision is recorded: ' + chosen + '.');
    etag = '';
    await refresh();
    $('you').setAttribute('tabindex', '-1');
    $('you').focus();
  } catch (e) {
    say('');
    if (e.status === 0 || e.status >= 500) trouble(e, confirmDecision);
    else refused(e);
  } finally {
    $('confirm-yes').disabled = false;
  }
}

async function download() {
  const check = $('artifact-check');
  check.textContent = 'Downloading…';
  try {
    const { bytes, stated } = await api.artifact(id, state.participantToken);
    const got = await api.sha256Hex(bytes);
    const ok = got === stated && got === room.artifact.sha256;
    check.textContent = ok
      ? '✓ Downloaded ' + bytes.length.toLocaleString('en-US') + ' bytes; their SHA-256 matches the digest above.'
      : '✗ The downloaded bytes do not match the digest above. Do not rely on this copy.';
    saveFile('CONSENSUS.md', 'text/markdown', bytes);
    say(ok ? 'CONSENSUS.md downloaded and checked.' : 'The download does not match its digest.');
  } catch (e) {
    check.textContent = '';
    if (e.status === 401) lostAccess(); else trouble(e, download);
  }
}

function currentRevision() {
  return room ? room.revision.canonicalRevision : state.exchanged && state.exchanged.canonicalRevision;
}
function currentMarkdown() {
  return room ? room.revision.markdown : state.exchanged && state.exchanged.markdown;
}

$('claim-form').addEventListener('submit', submitClaim);
$('post-form').addEventListener('submit', submitPost);
$('post-body').addEventListener('input', updateCounter);
$('decide').addEventListener('click', askConfirm);
$('confirm-yes').addEventListener('click', confirmDecision);
$('confirm-no').addEventListener('click', () => $('confirm').close());
$('confirm').addEventListener('close', () => { if (opener && !opener.closest('[hidden]')) opener.focus(); });
$('download').addEventListener('click', download);
$('save-revision').addEventListener('click', () => saveFile('revision.json', 'application/json', new TextEncoder().encode(api.canonicalJSON(currentRevision()))));
$('save-markdown').addEventListener('click', () => saveFile('agreement.md', 'text/markdown', new TextEncoder().encode(currentMarkdown())));
document.addEventListener('visibilitychange', () => { if (!document.hidden && state.participantToken && room) refresh(); });

start();

// Rendering. Every piece of text that came from the service or from a
// participant is set with textContent (through el), never parsed as HTML.

export const $ = id => document.getElementById(id);

/** Creates an element with text content and attributes; children follow. */
export function el(tag, text, attrs = {}, ...children) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null && text !== '') e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) if (c) e.append(c);
  return e;
}

/** Replaces the children of a container. */
export function fill(container, children) {
  container.replaceChildren(...children.filter(Boolean));
}

const localFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'long' });
const shortFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/**
 * A time in the reader's time zone, with the zone's name once: the format
 * names the zone already when it is UTC ("… 2:00:00 PM UTC").
 */
export function localTime(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time';
  const s = localFormat.format(d);
  return s.endsWith(' ' + zone) ? s : s + ' (' + zone + ')';
}

/** A time as recorded: UTC. */
export function utcTime(iso) {
  return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z').replace(/Z$/, ' UTC');
}

export function shortTime(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : shortFormat.format(d);
}

const kindWords = { agent: 'AI agent', human: 'person' };
const actionWords = {
  comment: 'commented', question: 'asked a question', change_request: 'requested a change',
  agree: 'agreed', disagree: 'disagreed', abstain: 'abstained',
};
const decisionWords = { agree: 'Agreed', disagree: 'Disagreed', abstain: 'Abstained' };
const stateWords = { invited: 'has not claimed their place yet', claimed: 'has claimed their place, no decision yet', decided: 'has decided' };

/** One participant of the locked revision (or of the room, with state). */
function person(p, youId) {
  const li = el('li', null, {}, el('span', p.display_name ?? p.displayName, { class: 'name' }));
  li.append(el('span', kindWords[p.kind] || p.kind, { class: 'tag' }));
  li.append(el('span', (p.required ? 'required' : 'optional'), { class: 'tag' }));
  if ((p.participant_id ?? p.participantId) === youId) li.append(el('span', 'you', { class: 'tag' }));
  if (p.state) {
    const decided = p.decision ? decisionWords[p.decision] + ' · ' + shortTime(p.decidedAt) : stateWords[p.state] || p.state;
    li.append(el('div', decided, { class: 'small muted' }));
  }
  return li;
}

/**
 * States a revision's decision rule in words: "unanimity-of-required", or
 * {"type": "quorum", "agree": k} over the required participants.
 */
export function ruleWords(rule, participants) {
  const n = (participants || []).filter(p => p.required).length;
  if (rule && typeof rule === 'object' && rule.type === 'quorum') {
    return rule.agree + ' of the ' + n + ' required participant' + (n === 1 ? '' : 's') + ' must agree. ' +
      'A disagreement or an abstention counts against it: once fewer than ' + rule.agree +
      ' required participants could still agree, it ends without consensus.';
  }
  return 'Every required participant must agree. One disagreement or abstention from a required participant ends it without consensus.';
}

/** Shows the locked revision: what the person is asked to decide on. */
export function showRevision(rev, digests, youId) {
  $('a-title').textContent = rev.title;
  $('a-revision').textContent = 'Revision ' + rev.revision + ', locked ' + utcTime(rev.locked_at);
  $('a-deadline-local').textContent = localTime(rev.deadline);
  $('a-deadline-utc').textContent = 'That is ' + utcTime(rev.deadline) + '.';
  $('a-rule').textContent = ruleWords(rev.decision_rule, rev.participants);
  $('a-objective').textContent = rev.objective;
  const rules = Array.isArray(rev.rules) ? rev.rules : [];
  fill($('a-rules'), rules.map(r => el('li', r)));
  $('a-rules').hidden = rules.length === 0;
  $('a-norules').hidden = rules.length !== 0;
  fill($('roster'), (rev.participants || []).map(p => person(p, youId)));
  $('a-revdigest').textContent = digests.revisionDigest;
  $('a-mddigest').textContent = digests.markdownDigest;
  $('a-markdown').textContent = digests.markdown;
}

/** Shows whether a digest recomputed in this browser matches the stated one. */
export function showCheck(id, matches) {
  const e = $(id);
  e.textContent = matches
    ? '✓ Recomputed in this browser: it matches.'
    : '✗ Recomputed in this browser: it does NOT match. Do not decide; tell the operator.';
  e.className = 'small ' + (matches ? '' : 'error');
}

const outcomeText = {
  pending: 'the agreement is open and waiting for decisions.',
  reached: 'every required participant agreed.',
  disagreed: 'a required participant disagreed, so the agreement ended without consensus.',
  no_consensus: 'a required participant abstained, so the agreement ended without consensus.',
  expired: 'the deadline passed before every required participant decided. Nothing more can be recorded.',
};

/** The outcome in words under a quorum rule, whose statement r gives. */
function quorumText(status, r) {
  switch (status) {
    case 'reached': return r.agree + ' required participants agreed, as the rule asks (' + r.statement + ').';
    case 'disagreed': return 'too few required participants could still agree (' + r.statement + '), so the agreement ended without consensus.';
    case 'expired': return 'the deadline passed before ' + r.agree + ' required participants agreed. Nothing more can be recorded.';
  }
  return outcomeText[status];
}

/** Shows the outcome, what it waits for, and the participants' states. */
export function showOutcome(room) {
  const o = room.outcome;
  const r = room.decisionRule;
  const box = $('outcome');
  box.className = 'box ' + (o.status === 'pending' ? 'status-pending' : o.status === 'reached' ? 'status-reached' : 'status-final');
  const when = o.decidedAt ? ' Final since ' + localTime(o.decidedAt) + '.' : ' The deadline is ' + localTime(room.deadline) + '.';
  const text = r && r.type === 'quorum' ? quorumText(o.status, r) : outcomeText[o.status];
  const lines = [el('p', null, {}, el('strong', o.status, { 'data-outcome': o.status }), ' — ' + (text || '') + when)];
  if (r && o.status === 'pending') {
    const more = r.agreementsNeeded === 1 ? '1 more agreement is needed' : r.agreementsNeeded + ' more agreements are needed';
    lines.push(el('p', 'Decision rule: ' + r.statement + '. Agreements so far: ' + r.agreed + '; ' + more + '.', { id: 'rule-progress' }));
  }
  fill(box, lines);
  const names = new Map(room.roster.map(p => [p.participantId, p]));
  let waiting;
  if (o.status === 'pending') {
    waiting = room.roster.filter(p => p.required && (!p.decision || p.stale)).map(p => el('li', null, {},
      el('span', p.displayName, { class: 'name' }), ' ' + (p.stale ? 'must decide again: the terms changed since their decision.' : p.state === 'invited' ? 'has not claimed their place yet.' : 'has not decided yet.')));
  } else if (o.status === 'expired') {
    waiting = room.roster.filter(p => p.required && !p.decision).map(p => el('li', null, {},
      el('span', p.displayName, { class: 'name' }), ' did not decide before the deadline.'));
  } else {
    const deciding = room.events.find(e => e.id === o.decidingEventId);
    const who = deciding && names.get(deciding.participantId);
    const settled = { reached: ' agreed, the last required participant to do so.', disagreed: ' disagreed.', no_consensus: ' abstained.' };
    waiting = who ? [el('li', null, {}, el('span', who.displayName, { class: 'name' }), settled[o.status] || ' decided.')] : [];
  }
  $('blocking-title').textContent = o.status === 'pending' ? 'What the outcome is waiting for'
    : o.status === 'expired' ? 'Who did not decide in time' : 'What settled it';
  fill($('blocking'), waiting.length ? waiting : [el('li', 'Nothing.')]);
  fill($('roster'), room.roster.map(p => person(p, room.you.participantId)));
}

/** Shows the events in sequence order with their authors and times. */
export function showEvents(room) {
  const names = new Map(room.roster.map(p => [p.participantId, p.displayName]));
  const items = room.events.map(e => {
    const li = el('li', null, { 'data-seq': String(e.seq) });
    const mine = e.participantId === room.you.participantId ? ' (you)' : '';
    li.append(el('div', null, {}, el('span', (names.get(e.participantId) || 'A participant') + mine, { class: 'who' }),
      ' ' + (actionWords[e.action] || e.action)));
    li.append(el('div', '#' + e.seq + ' · ' + localTime(e.createdAt), { class: 'meta' }));
    if (e.body) li.append(el('p', e.body, { class: 'body' }));
    return li;
  });
  fill($('events'), items);
  $('no-events').hidden = items.length !== 0;
}

/** Counts Unicode characters (code points), as the service does. */
export function characters(s) {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Offers bytes to the person as a file download. */
export function saveFile(name, type, bytes) {
  const url = URL.createObjectURL(new Blob([bytes], { type }));
  const a = el('a', null, { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 30000);
}

/** Shows n of max characters in counter; returns whether n is over max. */
export function showCounter(counter, n, max) {
  const over = n > max;
  counter.textContent = n.toLocaleString('en-US') + ' of ' + max.toLocaleString('en-US') + ' characters' +
    (over ? ' — ' + (n - max).toLocaleString('en-US') + ' too many' : '');
  counter.classList.toggle('over', over);
  return over;
}

/** What the page says when an invitation link cannot be opened. */
export const invalidLink = 'This invitation cannot be opened. Its deadline may have passed (an invitation expires at the ' +
  'agreement\'s deadline), the operator may have revoked it or sent a newer email that replaced it, or the link ' +
  'may be incomplete. Nothing was recorded. If you think it should still work, ask the person who invited you to send it again.';

/** The decisions' names as the page shows them. */
export const decisionNames = { agree: 'Agree', disagree: 'Disagree', abstain: 'Abstain' };

/** What the page says when the service refused a command, by problem code. */
export const refusals = {
  'revision-mismatch': 'The agreement has changed: the revision shown on this page is no longer the current one, so nothing was recorded. The page now shows the current revision; read it again before you decide.',
  'already-decided': 'You have already recorded a decision, and a decision cannot be changed. Nothing new was recorded.',
  'room-closed': 'The outcome is already final, so nothing more can be recorded.',
  'event-limit': 'You have reached the limit of 100 messages on this revision. Nothing was recorded.',
};

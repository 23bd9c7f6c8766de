// What the invitation page shows outside the room: its status line, its
// sections, alerts and heading, the proof code's error, and the agreement
// with its digest checks and the revisions locked since the email was sent.
import * as api from './api.js';
import { $, el, fill, showRevision, showCheck, utcTime } from './view.js';

const SECTIONS = ['opening', 'nolink', 'outcome-section', 'agreement', 'claim', 'room'];

export function say(text) { $('status').textContent = text; }

export function show(...ids) {
  for (const s of SECTIONS) $(s).hidden = !ids.includes(s);
}

export function warn(text, retry) {
  const box = $('alert');
  delete box.dataset.kind;
  if (!text) { box.hidden = true; box.replaceChildren(); return; }
  fill(box, [el('p', text)]);
  if (retry) {
    const b = el('button', 'Try again', { type: 'button', class: 'secondary' });
    b.addEventListener('click', () => { warn(''); retry(); });
    box.append(b);
  }
  box.hidden = false;
}

export function heading(text) { $('heading').textContent = text; }

/** Explains a failure that is not specific to one step. */
export function trouble(e, retry) {
  if (e.status === 0 || e.status >= 500 || e.status === 429) {
    const why = e.status === 429 ? 'Too many attempts came from your address. Wait a minute, then try again.'
      : 'The service could not answer just now. Nothing was lost; try again in a moment.';
    warn(why, retry);
    return;
  }
  warn('The service refused this request: ' + e.message);
}

/** Shows a problem with the proof code next to its field (or clears it). */
export function proofError(text) {
  const e = $('proof-error');
  e.textContent = text;
  e.hidden = !text;
  if (text) $('proof').setAttribute('aria-invalid', 'true'); else $('proof').removeAttribute('aria-invalid');
}

export async function showAgreement(rev, digests, youId, revisions) {
  showRevision(rev, digests, youId);
  showChanged(revisions || []);
  heading(rev.title);
  const revOK = await api.sha256Hex(new TextEncoder().encode(api.canonicalJSON(rev))) === digests.revisionDigest;
  const mdOK = await api.sha256Hex(new TextEncoder().encode(digests.markdown)) === digests.markdownDigest;
  showCheck('a-revcheck', revOK);
  showCheck('a-mdcheck', mdOK);
}

/**
 * An invitation email names the revision current when it was sent; when a
 * later one was locked since, say so, and whether the terms (title,
 * objective, rules) changed or only the deadline or the participants.
 */
function showChanged(revisions) {
  const box = $('a-changed');
  if (revisions.length < 2) { box.hidden = true; $('a-locked').hidden = false; return; }
  const current = revisions[revisions.length - 1];
  const lines = [el('p', null, {}, el('strong', 'This agreement has changed since it was first sent.'),
    ' It is now at revision ' + current.number + '; an invitation email names the revision current when it was sent, so yours may name an earlier one. What you read here, and decide on, is revision ' + current.number + '.')];
  const items = revisions.slice(1).map((r, i) => {
    const before = revisions[i];
    const what = r.termsDigest === before.termsDigest
      ? 'the title, objective and rules stayed the same (the deadline or the participants changed); a decision made before still counts.'
      : 'the title, objective or rules changed; a decision made on an earlier revision no longer counts.';
    return el('li', 'Revision ' + r.number + ', locked ' + utcTime(r.lockedAt) + ': ' + what);
  });
  lines.push(el('ul', null, {}, ...items));
  fill(box, lines);
  box.hidden = false;
  $('a-locked').hidden = true;
}

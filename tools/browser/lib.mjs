// Helpers of the browser test: the line protocol with the Go test that
// started this script, screenshots at two sizes, and axe-core checks.
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/**
 * The Go test writes one JSON object per line on stdin: first the
 * configuration, then one answer per request this script makes. This
 * script writes its requests and its result as lines starting with "@@ ".
 */
export function channel() {
  const lines = readline.createInterface({ input: process.stdin });
  const queue = [];
  const waiting = [];
  lines.on('line', line => {
    const v = JSON.parse(line);
    if (waiting.length) waiting.shift()(v); else queue.push(v);
  });
  const next = () => new Promise(resolve => (queue.length ? resolve(queue.shift()) : waiting.push(resolve)));
  return {
    next,
    /** Asks the Go side to act (an agent decides, the operator revokes...) and waits for it. */
    async ask(need) {
      process.stdout.write('@@ ' + JSON.stringify({ need }) + '\n');
      const answer = await next();
      if (answer.done !== need) throw new Error('the Go test answered ' + JSON.stringify(answer) + ' to ' + need);
    },
    result(v) { process.stdout.write('@@ ' + JSON.stringify({ result: v }) + '\n'); },
    close() { lines.close(); },
  };
}

/** Collects failed checks; the script exits non-zero when there is any. */
export class Checks {
  constructor() { this.failures = []; this.start = Date.now(); }
  ok(cond, what) {
    const at = ((Date.now() - this.start) / 1000).toFixed(1) + 's ';
    if (cond) console.log(at + 'ok: ' + what);
    else { console.log(at + 'FAIL: ' + what); this.failures.push(what); }
    return cond;
  }
}

let shotCount = 0;

/** Saves a full-page screenshot of the page at desktop and at phone width. */
export async function screenshots(page, dir, name, checks) {
  shotCount++;
  const base = String(shotCount).padStart(2, '0') + '-' + name;
  await page.screenshot({ path: path.join(dir, base + '-desktop.png'), fullPage: true });
  await page.setViewportSize(PHONE);
  await page.waitForTimeout(50);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  checks.ok(overflow <= 0, name + ': nothing is wider than a 390-pixel phone screen (overflow ' + overflow + ' px)');
  await page.screenshot({ path: path.join(dir, base + '-phone.png'), fullPage: true });
  await page.setViewportSize(DESKTOP);
}

/** Runs axe-core on the page as it is; serious or critical violations fail. */
export async function axe(page, name, checks) {
  // The pages' policy blocks injected script tags; evaluating the source
  // through the DevTools protocol is allowed, and must be redone after
  // every navigation.
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical');
  for (const v of result.violations) {
    console.log('axe ' + name + ': ' + v.impact + ' ' + v.id + ': ' + v.help + ' (' + v.nodes.map(n => n.target.join(' ')).join(', ') + ')');
  }
  checks.ok(bad.length === 0, name + ': axe-core finds no serious or critical violation');
}

/**
 * Reports whether the focus reaches an element matching sel within
 * timeout ms. A page moves the focus after its own awaits (a fetch, a
 * re-render), so a check waits for it, bounded, rather than look once.
 */
export async function focusReaches(page, sel, timeout = 3000) {
  return page.waitForFunction(s => document.activeElement?.matches(s) || false, sel, { timeout }).then(() => true, () => false);
}

// Strict JSON reading and RFC 8785 canonical writing for the record verifier,
// on the standard library only. JSON.parse resolves a duplicate member name
// by keeping the last one; a record with two readings must be refused, so
// this parser refuses duplicate names, lone surrogates (escaped or as
// invalid UTF-8) and anything after the document.

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

export function parseStrict(bytes) {
  const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  let i = 0;
  const err = (msg) => new Error(`${msg} at offset ${i}`);
  const ws = () => {
    while (i < text.length && WS.has(text.charCodeAt(i))) i++;
  };
  const expect = (s) => {
    if (text.startsWith(s, i)) i += s.length;
    else throw err(`expected ${s}`);
  };
  function string() {
    expect('"');
    let out = "";
    for (;;) {
      if (i >= text.length) throw err("unterminated string");
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return out;
      }
      if (c < 0x20) throw err("control character in a string");
      if (c !== 0x5c) {
        out += text[i++];
        continue;
      }
      const e = text[i + 1];
      i += 2;
      const simple = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" }[e];
      if (simple !== undefined) {
        out += simple;
        continue;
      }
      if (e !== "u") throw err("bad escape");
      const unit = () => {
        const h = text.slice(i, i + 4);
        if (!/^[0-9a-fA-F]{4}$/.test(h)) throw err("bad \\u escape");
        i += 4;
        return parseInt(h, 16);
      };
      const u = unit();
      if (u >= 0xdc00 && u <= 0xdfff) throw err("lone low surrogate");
      if (u >= 0xd800 && u <= 0xdbff) {
        if (!text.startsWith("\\u", i)) throw err("lone high surrogate");
        i += 2;
        const lo = unit();
        if (lo < 0xdc00 || lo > 0xdfff) throw err("lone high surrogate");
        out += String.fromCharCode(u, lo);
      } else {
        out += String.fromCharCode(u);
      }
    }
  }
  function value() {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const o = Object.create(null);
      ws();
      if (text[i] === "}") {
        i++;
        return o;
      }
      for (;;) {
        ws();
        const k = string();
        if (Object.prototype.hasOwnProperty.call(o, k)) throw err(`duplicate member ${JSON.stringify(k)}`);
        ws();
        expect(":");
        o[k] = value();
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "}") {
          i++;
          return o;
        } else throw err("expected , or }");
      }
    }
    if (c === "[") {
      i++;
      const a = [];
      ws();
      if (text[i] === "]") {
        i++;
        return a;
      }
      for (;;) {
        a.push(value());
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "]") {
          i++;
          return a;
        } else throw err("expected , or ]");
      }
    }
    if (c === '"') return string();
    for (const [lit, v] of [["true", true], ["false", false], ["null", null]]) {
      if (text.startsWith(lit, i)) {
        i += lit.length;
        return v;
      }
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) throw err("unexpected character");
    i += m[0].length;
    const n = Number(m[0]);
    if (!Number.isFinite(n)) throw err("number out of range");
    return n;
  }
  const v = value();
  ws();
  if (i !== text.length) throw err("data after the JSON document");
  return v;
}

// canonicalize writes RFC 8785: members sorted by UTF-16 code units, no
// whitespace, strings and numbers as ECMAScript's JSON.stringify writes them.
export function canonicalize(v) {
  if (v === null || typeof v === "boolean" || typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new Error("non-finite number");
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return "[" + v.map(canonicalize).join(",") + "]";
  return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonicalize(v[k])).join(",") + "}";
}

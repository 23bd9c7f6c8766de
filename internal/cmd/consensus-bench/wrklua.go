package main

import (
	"fmt"
	"net/url"
	"strings"
)

// The Lua scripts wrk runs. Every request string is built once, in init
// (wrk.format, so the Host header and Content-Length are wrk's own); per
// request the script only picks one, or, for an append, joins a prebuilt
// head, a fresh Idempotency-Key and a prebuilt tail. There is no
// response() callback: defining one makes wrk hand every answer's headers
// to Lua. done() prints one WRKRESULT line for parseWrkResult.

// luaQuote writes s as a Lua string literal (decimal escapes, which Lua 5.1
// and LuaJIT both read).
func luaQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// requestPath is the path (and query) of an absolute URL, as wrk sends it.
func requestPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.RequestURI()
}

// luaCommon numbers the threads (setup runs in wrk's main Lua state, before
// each thread's init) and reports the run.
const luaCommon = `
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function done(summary, latency, requests)
  local e = summary.errors
  local exhausted = 0
  for _, t in ipairs(threads) do
    exhausted = exhausted + (t:get("exhausted") or 0)
  end
  io.write(string.format("WRKRESULT requests=%.0f duration_us=%.0f bytes=%.0f connect=%.0f read=%.0f write=%.0f status=%.0f timeout=%.0f p50_us=%.0f p99_us=%.0f exhausted=%.0f\n",
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), exhausted))
end
`

// readTarget is one GET request shape: a participant's credential, and
// with a conditional read, that participant's current ETag.
type readTarget struct {
	Path, Auth, ETag string
}

// readLua sends a uniformly random one of ts per request.
func readLua(ts []readTarget) string {
	var b strings.Builder
	b.WriteString("-- consensus-bench: GET as random participants\nlocal targets = {\n")
	for _, t := range ts {
		etag := "nil"
		if t.ETag != "" {
			etag = luaQuote(t.ETag)
		}
		fmt.Fprintf(&b, "  {%s, %s, %s},\n", luaQuote(t.Path), luaQuote(t.Auth), etag)
	}
	b.WriteString(`}
local reqs, n = {}, 0

function init(args)
  math.randomseed(os.time() + 7919 * tid)
  for i, t in ipairs(targets) do
    local h = {["Authorization"] = t[2]}
    if t[3] then h["If-None-Match"] = t[3] end
    reqs[i] = wrk.format("GET", t[1], h)
  end
  n = #reqs
  targets = nil
end

function request()
  return reqs[math.random(n)]
end
`)
	b.WriteString(luaCommon)
	return b.String()
}

// appendSlot is one participant's share of an append load: the wrk thread
// it belongs to, its events path, credential and how many events it may
// still post on the revision.
type appendSlot struct {
	Thread     int
	Path, Auth string
	Budget     int
}

// appendRoom is one room's command body and participants.
type appendRoom struct {
	Body  string
	Slots []appendSlot
}

// exhaustedPath answers 404 (no route): what a thread sends once its
// participants have all used up their events, so /metrics counts it.
const exhaustedPath = "/api/v1/bench-participants-used-up"

// wrk calls request() once in its first thread before the load, to check
// the script, and sends nothing: one event slot of that thread goes unused.

// appendLua posts one comment per request into a uniformly random room
// (among those where the thread still has a participant with events left),
// as that room's next participant of the thread's share, with an
// Idempotency-Key of keyPrefix, the thread and a counter.
func appendLua(rooms []appendRoom, keyPrefix string) string {
	var b strings.Builder
	b.WriteString("-- consensus-bench: event appends, a random room per request\nlocal all = {\n")
	for _, r := range rooms {
		fmt.Fprintf(&b, "  {body = %s, slots = {\n", luaQuote(r.Body))
		for _, s := range r.Slots {
			fmt.Fprintf(&b, "    {%d, %s, %s, %d},\n", s.Thread, luaQuote(s.Path), luaQuote(s.Auth), s.Budget)
		}
		b.WriteString("  }},\n")
	}
	fmt.Fprintf(&b, "}\nlocal keyPrefix = %s\nlocal exhaustedPath = %s\n", luaQuote(keyPrefix), luaQuote(exhaustedPath))
	b.WriteString(`local rooms, nrooms = {}, 0
local counter = 0
local prefix, waste
exhausted = 0

function init(args)
  math.randomseed(os.time() + 7919 * tid)
  local mark = "\001KEY\001"
  for _, r in ipairs(all) do
    local ps = {}
    for _, s in ipairs(r.slots) do
      if s[1] == tid and s[4] > 0 then
        local req = wrk.format("POST", s[2], {["Authorization"] = s[3], ["Content-Type"] = "application/json", ["Idempotency-Key"] = mark}, r.body)
        local i = req:find(mark, 1, true)
        ps[#ps + 1] = {req:sub(1, i - 1), req:sub(i + #mark), s[4]}
      end
    end
    if #ps > 0 then
      nrooms = nrooms + 1
      rooms[nrooms] = {ps = ps, cur = 1}
    end
  end
  all = nil
  prefix = keyPrefix .. tid .. "-"
  waste = wrk.format("GET", exhaustedPath, {})
end

function request()
  if nrooms == 0 then
    exhausted = exhausted + 1
    return waste
  end
  local ri = math.random(nrooms)
  local room = rooms[ri]
  local ps = room.ps
  local n = #ps
  local i = room.cur
  if i > n then i = 1 end
  local p = ps[i]
  p[3] = p[3] - 1
  if p[3] > 0 then
    room.cur = i + 1
  else
    ps[i] = ps[n]
    ps[n] = nil
    room.cur = i
    if n == 1 then
      rooms[ri] = rooms[nrooms]
      rooms[nrooms] = nil
      nrooms = nrooms - 1
    end
  end
  counter = counter + 1
  return p[1] .. prefix .. counter .. p[2]
end
`)
	b.WriteString(luaCommon)
	return b.String()
}

package live

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// MaxWait caps how long a request is held.
const MaxWait = 60 * time.Second

// KeepAlive is the longest a stream stays silent: a comment line at least
// this often keeps proxies from closing it.
const KeepAlive = 15 * time.Second

// PreferWait reads the RFC 7240 wait preference from the Prefer header
// values: the number of seconds asked for, capped at MaxWait. ok is false
// when no valid wait preference is present (the request is then answered
// at once); wait=0 is valid and asks for no wait.
func PreferWait(values []string) (wait time.Duration, ok bool) {
	for _, v := range values {
		for _, pref := range strings.Split(v, ",") {
			name, val, found := strings.Cut(strings.TrimSpace(strings.SplitN(pref, ";", 2)[0]), "=")
			if !found || !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			n, err := strconv.ParseUint(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
			switch {
			case errors.Is(err, strconv.ErrRange), err == nil && n >= uint64(MaxWait/time.Second):
				return MaxWait, true // any number of seconds is a wait: capped, however large
			case err != nil:
				return 0, false
			}
			return time.Duration(n) * time.Second, true
		}
	}
	return 0, false
}

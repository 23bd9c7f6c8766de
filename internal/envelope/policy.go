package envelope

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// DefaultOrigin is the origin invitations are pinned to when Policy.Origin is
// empty.
const DefaultOrigin = "https://consensus.md"

// Policy says which origin invitations must come from.
type Policy struct {
	// Origin is the pinned origin, scheme://host[:port] with no path;
	// DefaultOrigin when empty.
	Origin string
	// AllowHTTPLoopback accepts an http:// Origin, and only when its host is
	// 127.0.0.1, ::1 or localhost (local runs).
	AllowHTTPLoopback bool
}

// normalize returns the origin as compared against envelope URLs:
// lower-case scheme://host[:port]. A bad policy is a configuration error, not
// a CheckError: no email can pass it.
func (p Policy) normalize() (string, error) {
	raw := p.Origin
	if raw == "" {
		raw = DefaultOrigin
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("envelope: policy origin: %w", err)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" ||
		(u.Path != "" && u.Path != "/") || u.Host == "" {
		return "", errors.New("envelope: policy origin must be scheme://host[:port] with no path, query or user")
	}
	host := strings.ToLower(u.Host)
	switch u.Scheme {
	case "https":
	case "http":
		if !p.AllowHTTPLoopback {
			return "", errors.New("envelope: policy origin uses http:// but AllowHTTPLoopback is off")
		}
		if !isLoopbackName(u.Hostname()) {
			return "", errors.New("envelope: policy origin uses http:// on a host other than 127.0.0.1, ::1 or localhost")
		}
	default:
		return "", errors.New("envelope: policy origin scheme must be https (or http on loopback)")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", errors.New("envelope: policy origin has an invalid port")
		}
	}
	return u.Scheme + "://" + host, nil
}

// Validate reports whether the policy is usable.
func (p Policy) Validate() error {
	_, err := p.normalize()
	return err
}

// isLoopbackName accepts the three spellings of a loopback host a local run
// uses, and no other: http:// is allowed for them only.
func isLoopbackName(host string) bool {
	return host == "127.0.0.1" || host == "::1" || strings.EqualFold(host, "localhost")
}

package command

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
)

// Describe renders a command's error for stderr: a failed network request
// becomes "cannot reach <origin>: <reason>" instead of Go's error chain;
// anything else keeps its message.
func Describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		origin := ue.URL
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			origin = u.Scheme + "://" + u.Host
		}
		return "cannot reach " + origin + ": " + NetReason(ue.Err)
	}
	return err.Error()
}

// NetReason says in a few words why a connection failed: "connection
// refused", "no such host", "timed out", or the innermost error's message.
func NetReason(err error) string {
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host"
		}
		return "cannot resolve " + dns.Name + ": " + dns.Err
	case errors.Is(err, context.DeadlineExceeded), os.IsTimeout(err):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "interrupted"
	}
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			break
		}
		err = inner
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

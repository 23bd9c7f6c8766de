package logmonitor

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Status is the result of one check.
type Status string

// The statuses of a check.
const (
	// OK: the check passed.
	OK Status = "ok"
	// Fail: the check found an inconsistency.
	Fail Status = "FAIL"
	// Pending: not yet decidable (a room's head newer than the log's,
	// within the grace period).
	Pending Status = "pending"
	// Unchecked: the check could not run (a room that did not answer).
	Unchecked Status = "unchecked"
)

// Check is one line of a report.
type Check struct {
	Name   string
	Status Status
	Detail string
}

// Report is every check a run made, in order.
type Report struct {
	Checks []Check
}

func (r *Report) add(name string, s Status, format string, a ...any) {
	r.Checks = append(r.Checks, Check{Name: name, Status: s, Detail: fmt.Sprintf(format, a...)})
}

// Failed names the checks that failed.
func (r *Report) Failed() []string {
	return r.named(Fail)
}

// Unchecked names the checks that could not run.
func (r *Report) Unchecked() []string {
	return r.named(Unchecked)
}

func (r *Report) named(s Status) []string {
	var out []string
	for _, c := range r.Checks {
		if c.Status == s {
			out = append(out, c.Name)
		}
	}
	return out
}

// Write prints one line per check ("ok name: detail", "FAIL name:
// detail"…) and a last line: "ok", or "FAIL: " and the checks that failed.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%-4s %s: %s\n", c.Status, c.Name, c.Detail)
	}
	switch failed, unchecked := r.Failed(), r.Unchecked(); {
	case len(failed) > 0:
		fmt.Fprintf(&b, "FAIL: %s\n", strings.Join(failed, ", "))
	case len(unchecked) > 0:
		fmt.Fprintf(&b, "UNCHECKED: %s\n", strings.Join(unchecked, ", "))
	default:
		b.WriteString("ok\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// UnavailableError is a failure to check at all: a file that could not be
// read, a server that did not answer or answered with an error status.
// Nothing was found inconsistent; the caller should retry and investigate
// if it persists.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

func unavailable(format string, a ...any) error {
	return &UnavailableError{Err: fmt.Errorf(format, a...)}
}

// IsUnavailable reports whether err is (or wraps) an *UnavailableError.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

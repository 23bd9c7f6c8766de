package record

import (
	"fmt"
	"io"
	"strings"
)

// Check names, in the order Verify runs them. tools/verify-record.mjs uses
// the same names, and the vectors in conformance/ list the ones that must
// fail.
const (
	CheckFormat               = "format"
	CheckRevision             = "revision"
	CheckRevisionDigest       = "revision-digest"
	CheckMarkdownDigest       = "markdown-digest"
	CheckTermsDigest          = "terms-digest"
	CheckRoster               = "roster"
	CheckCommand              = "command"
	CheckCommandDigest        = "command-digest"
	CheckChain                = "chain"
	CheckParticipantSignature = "participant-signature"
	CheckReplyEvidence        = "reply-evidence"
	CheckChainHead            = "chain-head"
	CheckEventCount           = "event-count"
	CheckOutcome              = "outcome"
	CheckArtifact             = "artifact"
	CheckServiceSignature     = "service-signature"
)

// Checks lists every check in order.
var Checks = []string{
	CheckFormat, CheckRevision, CheckRevisionDigest, CheckMarkdownDigest, CheckTermsDigest, CheckRoster, CheckCommand, CheckCommandDigest,
	CheckChain, CheckParticipantSignature, CheckReplyEvidence, CheckChainHead, CheckEventCount, CheckOutcome, CheckArtifact, CheckServiceSignature,
}

// Finding is one line of a report: a check and what it found.
type Finding struct {
	Check   string
	Message string
}

// Report is the result of Verify: for each check, passed with a summary,
// failed with one finding per fault, or skipped with the reason.
type Report struct {
	Passed  []Finding
	Failed  []Finding
	Skipped []Finding
}

// OK reports whether no check failed. A skipped check is not a failure:
// Authenticated tells whether the service signature was checked.
func (r *Report) OK() bool { return len(r.Failed) == 0 }

// Authenticated reports whether the service signature was checked and
// verified.
func (r *Report) Authenticated() bool {
	for _, f := range r.Passed {
		if f.Check == CheckServiceSignature {
			return true
		}
	}
	return false
}

// FailedChecks returns the names of the failed checks, each once, in the
// order of Checks.
func (r *Report) FailedChecks() []string {
	seen := map[string]bool{}
	for _, f := range r.Failed {
		seen[f.Check] = true
	}
	var out []string
	for _, c := range Checks {
		if seen[c] {
			out = append(out, c)
		}
	}
	return out
}

func (r *Report) pass(check, format string, args ...any) {
	r.Passed = append(r.Passed, Finding{check, fmt.Sprintf(format, args...)})
}

func (r *Report) fail(check, format string, args ...any) {
	r.Failed = append(r.Failed, Finding{check, fmt.Sprintf(format, args...)})
}

func (r *Report) skip(check, format string, args ...any) {
	r.Skipped = append(r.Skipped, Finding{check, fmt.Sprintf(format, args...)})
}

// failedSince reports whether check failed after the first n findings.
func (r *Report) failedSince(n int, check string) bool {
	for _, f := range r.Failed[n:] {
		if f.Check == check {
			return true
		}
	}
	return false
}

// Write prints the report as both verifiers do: one line per check in
// order ("ok", "FAIL" per fault, "skip"), then a RESULT line.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	for _, c := range Checks {
		for _, f := range r.Failed {
			if f.Check == c {
				fmt.Fprintf(&b, "FAIL %s: %s\n", c, f.Message)
			}
		}
		for _, f := range r.Passed {
			if f.Check == c {
				fmt.Fprintf(&b, "ok   %s: %s\n", c, f.Message)
			}
		}
		for _, f := range r.Skipped {
			if f.Check == c {
				fmt.Fprintf(&b, "skip %s: %s\n", c, f.Message)
			}
		}
	}
	switch {
	case !r.OK():
		fmt.Fprintf(&b, "RESULT: FAILED (%s)\n", strings.Join(r.FailedChecks(), ", "))
	case !r.Authenticated():
		b.WriteString("RESULT: CONSISTENT, NOT AUTHENTICATED: every check ran passed, but the service signature was not checked\n")
	default:
		b.WriteString("RESULT: VERIFIED\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

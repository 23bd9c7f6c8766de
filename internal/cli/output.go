package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/cli/command"
)

// outputFlag is --output: "table", "json", or "" for a table on a terminal
// and JSON otherwise.
type outputFlag string

func (o *outputFlag) String() string { return string(*o) }
func (o *outputFlag) Type() string   { return "FORMAT" }
func (o *outputFlag) Set(v string) error {
	if v != "table" && v != "json" {
		return &command.UsageError{Msg: "must be table or json"}
	}
	*o = outputFlag(v)
	return nil
}

func (o *outputFlag) register(c *cobra.Command) {
	c.Flags().VarP(o, "output", "o", "table or json (default table on a terminal, json otherwise)")
}

// output writes raw as indented JSON, or as the table table renders.
func output(env Env, format outputFlag, raw json.RawMessage, table func(io.Writer, json.RawMessage) error) error {
	if format == "json" || (format == "" && !isTerminal(env.Stdout)) {
		return printJSON(env.Stdout, raw)
	}
	return table(forPeople(env.Stdout), raw)
}

// isTerminal reports whether w is a character device (a terminal), or a
// terminalWriter on one.
func isTerminal(w io.Writer) bool {
	if t, ok := w.(*terminalWriter); ok {
		return t.tty
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printJSON indents a JSON document, keeping the server's key order.
func printJSON(w io.Writer, raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// table aligns tab-separated cells in columns; what is written to it
// passes through terminalText first, so the columns align on what a
// terminal shows.
type table struct {
	cells io.Writer
	tw    *tabwriter.Writer
}

func newTable(w io.Writer) *table {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	return &table{cells: &terminalWriter{w: tw}, tw: tw}
}

func (t *table) Write(p []byte) (int, error) { return t.cells.Write(p) }

// Flush writes the table.
func (t *table) Flush() error { return t.tw.Flush() }

type outcomeJSON struct {
	Status          string  `json:"status"`
	DecidedAt       *string `json:"decidedAt"`
	DecidingEventID *string `json:"decidingEventId"`
}

func (o outcomeJSON) String() string {
	s := o.Status
	if o.DecidedAt != nil {
		s += " at " + *o.DecidedAt
	}
	if o.DecidingEventID != nil {
		s += " (event " + *o.DecidingEventID + ")"
	}
	return s
}

// printList renders a page of agreements; the next page's command, on
// stderr, repeats the flags that shaped this one (flags, such as
// " --limit 10").
func printList(w, stderr io.Writer, raw json.RawMessage, flags string) error {
	var page struct {
		Agreements []struct {
			AgreementID    string      `json:"agreementId"`
			Title          string      `json:"title"`
			RevisionNumber int         `json:"revisionNumber"`
			Deadline       string      `json:"deadline"`
			Outcome        outcomeJSON `json:"outcome"`
		} `json:"agreements"`
		NextCursor *string `json:"nextCursor"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "AGREEMENT\tOUTCOME\tREVISION\tDEADLINE\tTITLE")
	for _, a := range page.Agreements {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", a.AgreementID, a.Outcome.Status, a.RevisionNumber, a.Deadline, a.Title)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(page.Agreements) == 0 {
		fmt.Fprintln(w, "(no agreements)")
	}
	if page.NextCursor != nil {
		fmt.Fprintf(stderr, "more: consensus admin list%s --cursor %s\n", flags, *page.NextCursor)
	}
	return nil
}

func printCreated(w io.Writer, raw json.RawMessage) error {
	var a struct {
		AgreementID    string `json:"agreementId"`
		RevisionNumber int    `json:"revisionNumber"`
		RevisionDigest string `json:"revisionDigest"`
		MarkdownDigest string `json:"markdownDigest"`
		Deadline       string `json:"deadline"`
		Participants   []struct {
			ParticipantID string `json:"participantId"`
			InvitationID  string `json:"invitationId"`
			DisplayName   string `json:"displayName"`
			Kind          string `json:"kind"`
			Email         string `json:"email"`
			Required      bool   `json:"required"`
			Delivery      string `json:"delivery"`
		} `json:"participants"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return err
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "agreement\t%s\n", a.AgreementID)
	fmt.Fprintf(tw, "revision\t%d, digest %s\n", a.RevisionNumber, a.RevisionDigest)
	fmt.Fprintf(tw, "markdown digest\t%s\n", a.MarkdownDigest)
	fmt.Fprintf(tw, "deadline\t%s\n", a.Deadline)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "PARTICIPANT\tINVITATION\tNAME\tKIND\tEMAIL\tREQUIRED\tDELIVERY")
	for _, p := range a.Participants {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ParticipantID, p.InvitationID, p.DisplayName, p.Kind, p.Email, yesNo(p.Required), p.Delivery)
	}
	return tw.Flush()
}

func printAgreement(w io.Writer, raw json.RawMessage) error {
	var a struct {
		AgreementID    string      `json:"agreementId"`
		Title          string      `json:"title"`
		RevisionNumber int         `json:"revisionNumber"`
		Deadline       string      `json:"deadline"`
		CreatedAt      string      `json:"createdAt"`
		Outcome        outcomeJSON `json:"outcome"`
		RevisionDigest string      `json:"revisionDigest"`
		MarkdownDigest string      `json:"markdownDigest"`
		ChainHead      string      `json:"chainHead"`
		EventCount     int         `json:"eventCount"`
		Participants   []struct {
			ParticipantID string  `json:"participantId"`
			InvitationID  string  `json:"invitationId"`
			DisplayName   string  `json:"displayName"`
			Kind          string  `json:"kind"`
			Email         string  `json:"email"`
			Required      bool    `json:"required"`
			State         string  `json:"state"`
			Decision      *string `json:"decision"`
			Revoked       bool    `json:"revoked"`
			Deliveries    []struct {
				State     string  `json:"state"`
				Attempts  int     `json:"attempts"`
				LastReply *string `json:"lastReply"`
			} `json:"deliveries"`
		} `json:"participants"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return err
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "agreement\t%s\n", a.AgreementID)
	fmt.Fprintf(tw, "title\t%s\n", a.Title)
	fmt.Fprintf(tw, "outcome\t%s\n", a.Outcome)
	fmt.Fprintf(tw, "revision\t%d, digest %s\n", a.RevisionNumber, a.RevisionDigest)
	fmt.Fprintf(tw, "markdown digest\t%s\n", a.MarkdownDigest)
	fmt.Fprintf(tw, "deadline\t%s\n", a.Deadline)
	fmt.Fprintf(tw, "created\t%s\n", a.CreatedAt)
	fmt.Fprintf(tw, "events\t%d, chain head %s\n", a.EventCount, a.ChainHead)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "PARTICIPANT\tINVITATION\tNAME\tKIND\tEMAIL\tREQUIRED\tSTATE\tDECISION\tLAST EMAIL")
	for _, p := range a.Participants {
		state, decision, email := p.State, "-", "-"
		if p.Revoked {
			state += ", revoked"
		}
		if p.Decision != nil {
			decision = *p.Decision
		}
		if n := len(p.Deliveries); n > 0 {
			d := p.Deliveries[n-1]
			email = fmt.Sprintf("%s after %d attempt(s)", d.State, d.Attempts)
			if d.LastReply != nil && d.State != "sent" {
				email += ": " + strings.TrimSpace(*d.LastReply)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ParticipantID, p.InvitationID, p.DisplayName, p.Kind, p.Email, yesNo(p.Required), state, decision, email)
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ProblemError is a refusal from the service: an RFC 9457 problem
// (application/problem+json) or, from something in front of it, a bare
// HTTP status.
type ProblemError struct {
	Method, Path string
	Status       int
	Title        string
	Detail       string
	Code         string
	// Field is the input at fault, when the service names one.
	Field string
	// Pointers are the JSON pointers of the inputs at fault with what is
	// wrong with each, from an "errors" member when the service sends one.
	Pointers  []Pointer
	RequestID string
	// Hint, when set, says what the command suspects went wrong.
	Hint string
}

// Pointer is one input at fault in a problem answer.
type Pointer struct {
	Pointer, Detail string
}

func newProblemError(method, path string, resp *http.Response, body []byte) *ProblemError {
	p := &ProblemError{Method: method, Path: path, Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
	var doc struct {
		Title, Detail, Code, Field string
		Errors                     []struct {
			Pointer, Field, Detail string
		}
	}
	if json.Unmarshal(body, &doc) == nil {
		p.Title, p.Detail, p.Code, p.Field = doc.Title, doc.Detail, doc.Code, doc.Field
		for _, e := range doc.Errors {
			ptr := e.Pointer
			if ptr == "" {
				ptr = e.Field
			}
			p.Pointers = append(p.Pointers, Pointer{Pointer: ptr, Detail: e.Detail})
		}
	}
	if p.Title == "" {
		p.Title = http.StatusText(resp.StatusCode)
	}
	return p
}

// Error renders the problem: a first line naming the request, title, status
// and code, then the detail and each field or pointer at fault, indented.
func (p *ProblemError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s (HTTP %d", p.Method, p.Path, p.Title, p.Status)
	if p.Code != "" {
		b.WriteString(", " + p.Code)
	}
	b.WriteString(")")
	if p.Detail != "" {
		b.WriteString("\n  " + p.Detail)
	}
	if p.Field != "" {
		b.WriteString("\n  field: " + p.Field)
	}
	for _, e := range p.Pointers {
		fmt.Fprintf(&b, "\n  %s: %s", e.Pointer, e.Detail)
	}
	if p.RequestID != "" {
		b.WriteString("\n  request id: " + p.RequestID)
	}
	if p.Hint != "" {
		b.WriteString("\n  hint: " + p.Hint)
	}
	return b.String()
}

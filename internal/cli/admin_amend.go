package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/cli/command"
)

func adminAmend(env Env, f *adminFlags) *cobra.Command {
	var file string
	var out outputFlag
	c := &cobra.Command{
		Use:   "amend AGREEMENT_ID -f FILE",
		Short: "Lock the next revision of a pending agreement",
		Long: `Lock revision n+1 of a pending agreement. FILE is JSON with any of title,
objective, rules (the complete new list), decisionRule ("unanimity-of-required"
or {"type": "quorum", "agree": k}), deadline, and participants to add
({displayName, kind, email, required}); - reads it from standard input.
Added participants get an invitation email; every other participant gets a
short notice with the new digests and no secret.

What it does to decisions: a decision made on an earlier revision still counts
when the terms (title, objective, rules, decision rule) did not change, so
moving the deadline or adding a participant asks nobody again. When the terms changed,
every earlier decision is stale and each participant decides again.
A final outcome (reached, disagreed, no_consensus, expired) cannot be amended.`,
		Example: `  echo '{"deadline":"2030-02-01T00:00:00Z"}' | consensus admin amend 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b -f -
  consensus admin amend 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b -f changes.json --output json`,
		Args: command.Args("AGREEMENT_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			return postFile(c.Context(), env, f, file, "/api/v1/admin/agreements/"+url.PathEscape(args[0])+"/revisions", out, printAmended)
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "the changes as JSON, `FILE` or - for standard input (required)")
	out.register(c)
	return c
}

// postFile sends the JSON that -f names to the operator route path and
// prints the answer in the chosen format, with table for a terminal.
func postFile(ctx context.Context, env Env, f *adminFlags, file, path string, out outputFlag, table func(io.Writer, json.RawMessage) error) error {
	body, err := readBodyFile(env, file)
	if err != nil {
		return err
	}
	client, err := newAdminClient(env, f)
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := client.do(ctx, "POST", path, body, &raw); err != nil {
		return err
	}
	return output(env, out, raw, table)
}

// readBodyFile reads the request body named by -f: a file, or standard
// input for "-".
func readBodyFile(env Env, file string) ([]byte, error) {
	switch file {
	case "":
		return nil, command.Usagef("missing -f FILE (use - for standard input)")
	case "-":
		if env.Stdin == nil {
			return nil, fmt.Errorf("-f -: no standard input")
		}
		return io.ReadAll(env.Stdin)
	}
	return os.ReadFile(file)
}

// printAmended shows the new revision, what changed, what it means for
// decisions, and every email queued.
func printAmended(w io.Writer, raw json.RawMessage) error {
	var a struct {
		AgreementID    string   `json:"agreementId"`
		RevisionNumber int      `json:"revisionNumber"`
		RevisionDigest string   `json:"revisionDigest"`
		MarkdownDigest string   `json:"markdownDigest"`
		TermsDigest    string   `json:"termsDigest"`
		TermsChanged   bool     `json:"termsChanged"`
		Changed        []string `json:"changed"`
		Deadline       string   `json:"deadline"`
		Added          []struct {
			ParticipantID, InvitationID, DisplayName, Kind, Email, Delivery string
			Required                                                        bool
		} `json:"added"`
		Notified []struct{ ParticipantID, InvitationID, Delivery string } `json:"notified"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return err
	}
	decisions := "unchanged terms: earlier decisions still count"
	if a.TermsChanged {
		decisions = "terms changed: earlier decisions are stale; every participant decides again"
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "agreement\t%s\n", a.AgreementID)
	fmt.Fprintf(tw, "revision\t%d, digest %s\n", a.RevisionNumber, a.RevisionDigest)
	fmt.Fprintf(tw, "terms digest\t%s\n", a.TermsDigest)
	fmt.Fprintf(tw, "markdown digest\t%s\n", a.MarkdownDigest)
	fmt.Fprintf(tw, "deadline\t%s\n", a.Deadline)
	fmt.Fprintf(tw, "changed\t%s\n", strings.Join(a.Changed, ", "))
	fmt.Fprintf(tw, "decisions\t%s\n", decisions)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "PARTICIPANT\tINVITATION\tEMAIL\tDELIVERY")
	for _, p := range a.Added {
		fmt.Fprintf(tw, "%s\t%s\tinvitation to %s (%s, %s)\t%s\n", p.ParticipantID, p.InvitationID, p.Email, p.Kind, requiredWord(p.Required), p.Delivery)
	}
	for _, p := range a.Notified {
		fmt.Fprintf(tw, "%s\t%s\trevision notice\t%s\n", p.ParticipantID, p.InvitationID, p.Delivery)
	}
	return tw.Flush()
}

func requiredWord(required bool) string {
	if required {
		return "required"
	}
	return "optional"
}

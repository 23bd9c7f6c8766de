package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/cli/command"
	"github.com/consensus-md/consensus/internal/config"
)

// defaultOperatorTokenFile is where `make run` writes the local operator token.
const defaultOperatorTokenFile = ".data/operator-token"

// adminFlags are the flags every admin command shares.
type adminFlags struct {
	url, tokenFile string
}

func adminCommand(env Env) *cobra.Command {
	var f adminFlags
	admin := &cobra.Command{
		Use:   "admin COMMAND",
		Short: "Operator commands: agreements, participants, API keys, the audit log",
		Long: `Operator commands over the operator API: lock an agreement and queue its
invitations, lock its next revision, list and inspect agreements, revoke a
participant, resend an invitation, manage the workspace's API keys and read
its audit log.

The service is --url, else $CONSENSUS_URL, else http://127.0.0.1:8080. The
credential (an API key of a workspace, cok_..., or the deployment's operator
token) is read from --token-file, else $CONSENSUS_OPERATOR_TOKEN or the file
$CONSENSUS_OPERATOR_TOKEN_FILE names, else .data/operator-token (written by
make run). It is never taken from a flag's value.

Data goes to stdout: a table on a terminal, JSON otherwise or with
--output json. Diagnostics go to stderr.`,
		Example: `  consensus admin create -f examples/agreement.json
  consensus admin list
  consensus admin get 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b --output json`,
		Args: command.AnyGroupArgs,
		RunE: command.Group,
	}
	admin.PersistentFlags().StringVar(&f.url, "url", "", "the service's base `URL` (default $CONSENSUS_URL, else http://127.0.0.1:8080)")
	admin.PersistentFlags().StringVar(&f.tokenFile, "token-file", "", "read the operator token from `FILE` (default $CONSENSUS_OPERATOR_TOKEN or $CONSENSUS_OPERATOR_TOKEN_FILE, else .data/operator-token)")
	admin.AddCommand(adminCreate(env, &f), adminAmend(env, &f), adminList(env, &f), adminGet(env, &f), adminRevoke(env, &f), adminResend(env, &f),
		adminKeys(env, &f), adminAudit(env, &f))
	return admin
}

func adminCreate(env Env, f *adminFlags) *cobra.Command {
	var file string
	var out outputFlag
	c := &cobra.Command{
		Use:   "create -f FILE",
		Short: "Lock an agreement and queue its invitation emails",
		Long: `Lock revision 1 of an agreement and queue one invitation email per participant.
FILE is the agreement as JSON ({title, objective, rules, deadline, participants},
and optionally decisionRule: {"type": "quorum", "agree": k} for k of the required,
and reminders: durations before the deadline such as ["PT48H", "PT2H"], [] for none,
24 and 1 hour when absent); - reads it from standard input. Prints the agreement's ids and digests and each
participant's invitation id; secrets and proofs exist only in the emails.`,
		Example: `  consensus admin create -f examples/agreement.json
  jq '.deadline = "2030-01-01T00:00:00Z"' examples/agreement.json | consensus admin create -f -
  consensus admin create -f agreement.json --output json | jq -r '.participants[].invitationId'`,
		Args: command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return postFile(c.Context(), env, f, file, "/api/v1/admin/agreements", out, printCreated)
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "the agreement as JSON, `FILE` or - for standard input (required)")
	out.register(c)
	return c
}

func adminList(env Env, f *adminFlags) *cobra.Command {
	var limit int
	var cursor string
	var out outputFlag
	c := &cobra.Command{
		Use:   "list",
		Short: "List agreements, newest first, one page at a time",
		Long: `List agreements, newest first: id, outcome, revision, deadline and title. When
more pages exist, the command for the next one is printed on stderr.`,
		Example: `  consensus admin list
  consensus admin list --limit 10 --cursor CURSOR
  consensus admin list --output json | jq -r '.agreements[].agreementId'`,
		Args: command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			q := url.Values{}
			if c.Flags().Changed("limit") {
				if limit < 1 || limit > 100 {
					return command.Usagef("--limit: must be from 1 to 100, got %d", limit)
				}
				q.Set("limit", fmt.Sprint(limit))
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			client, err := newAdminClient(env, f)
			if err != nil {
				return err
			}
			path := "/api/v1/admin/agreements"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			var raw json.RawMessage
			if err := client.do(c.Context(), "GET", path, nil, &raw); err != nil {
				return err
			}
			var flags string
			if f.url != "" {
				flags += " --url " + f.url
			}
			if c.Flags().Changed("limit") {
				flags += fmt.Sprintf(" --limit %d", limit)
			}
			return output(env, out, raw, func(w io.Writer, raw json.RawMessage) error { return printList(w, env.Stderr, raw, flags) })
		},
	}
	c.Flags().IntVar(&limit, "limit", 0, "page size, 1 to 100 (the service's default is 50)")
	c.Flags().StringVar(&cursor, "cursor", "", "start at `CURSOR`, the nextCursor of the previous page")
	out.register(c)
	return c
}

func adminGet(env Env, f *adminFlags) *cobra.Command {
	var out outputFlag
	var proof bool
	c := &cobra.Command{
		Use:   "get AGREEMENT_ID",
		Short: "Show an agreement: outcome, participants, email deliveries; or its record's log proof",
		Long: `Show one agreement: its outcome, digests and event count, each participant's
state and decision, and the delivery of every invitation email (attempts and
the mail server's last reply).

With --proof, print instead the proof that the agreement's final record is in
the transparency log: the consensus-log-proof/v1 bundle (the record's leaf,
its index, the inclusion proof and the checkpoint with the witnesses'
cosignatures), as JSON (on a terminal, a summary unless --output json). Save
it and check it with 'consensus verify record RECORD.json --keys KEYS.json
--proof PROOF.json'. Until
the outcome is final the service answers record-not-ready; until the log has
integrated the record (about a second), proof-not-ready.`,
		Example: `  consensus admin get 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b
  consensus admin get 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b --output json | jq .outcome
  consensus admin get 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b --proof > proof.json`,
		Args: command.Args("AGREEMENT_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			client, err := newAdminClient(env, f)
			if err != nil {
				return err
			}
			path := "/api/v1/admin/agreements/" + url.PathEscape(args[0])
			if proof {
				path += "/record/proof"
			}
			var raw json.RawMessage
			if err := client.do(c.Context(), "GET", path, nil, &raw); err != nil {
				return withProofHint(err)
			}
			if proof {
				return output(env, out, raw, printProof)
			}
			return output(env, out, raw, printAgreement)
		},
	}
	c.Flags().BoolVar(&proof, "proof", false, "print the record's transparency log proof (consensus-log-proof/v1) instead of the agreement")
	out.register(c)
	return c
}

func adminRevoke(env Env, f *adminFlags) *cobra.Command {
	var out outputFlag
	c := &cobra.Command{
		Use:   "revoke PARTICIPANT_ID",
		Short: "Revoke a participant: its token and invitation stop working at once",
		Long: `Revoke a participant: its participant token stops working at once and its
invitation with it. Revoking twice keeps the first time. It takes the
PARTICIPANT_ID, not the invitation id; 'consensus admin get' shows both.`,
		Example: `  consensus admin revoke 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b`,
		Args:    command.Args("PARTICIPANT_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			client, err := newAdminClient(env, f)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := client.do(c.Context(), "POST", "/api/v1/admin/participants/"+url.PathEscape(args[0])+"/revoke", nil, &raw); err != nil {
				return withHint(err, http.StatusNotFound, "revoke takes a PARTICIPANT_ID, not an invitation id: 'consensus admin get AGREEMENT_ID' shows both")
			}
			return output(env, out, raw, func(w io.Writer, raw json.RawMessage) error {
				var r struct{ ParticipantID, RevokedAt string }
				if err := json.Unmarshal(raw, &r); err != nil {
					return err
				}
				_, err := fmt.Fprintf(w, "participant %s revoked at %s\n", r.ParticipantID, r.RevokedAt)
				return err
			})
		},
	}
	out.register(c)
	return c
}

func adminResend(env Env, f *adminFlags) *cobra.Command {
	var out outputFlag
	c := &cobra.Command{
		Use:   "resend INVITATION_ID",
		Short: "Queue a new invitation email with a fresh secret and proof",
		Long: `Queue a new invitation email with a fresh secret and email proof; the previous
email stops working. It takes the INVITATION_ID, not the participant id;
'consensus admin get' shows both.`,
		Example: `  consensus admin resend 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b`,
		Args:    command.Args("INVITATION_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			client, err := newAdminClient(env, f)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := client.do(c.Context(), "POST", "/api/v1/admin/invitations/"+url.PathEscape(args[0])+"/resend", nil, &raw); err != nil {
				return withHint(err, http.StatusNotFound, "resend takes an INVITATION_ID, not a participant id: 'consensus admin get AGREEMENT_ID' shows both")
			}
			return output(env, out, raw, func(w io.Writer, raw json.RawMessage) error {
				var r struct{ InvitationID, Delivery string }
				if err := json.Unmarshal(raw, &r); err != nil {
					return err
				}
				_, err := fmt.Fprintf(w, "invitation %s: new email %s; the previous one no longer works\n", r.InvitationID, r.Delivery)
				return err
			})
		},
	}
	out.register(c)
	return c
}

type adminClient struct {
	base  string
	token string
	http  *http.Client
}

// newAdminClient finds the service and the operator token: --url, else
// CONSENSUS_URL, else the local default; --token-file, else the
// environment, else .data/operator-token.
func newAdminClient(env Env, f *adminFlags) (*adminClient, error) {
	base := f.url
	if base == "" {
		base = env.Getenv("CONSENSUS_URL")
	}
	base = strings.TrimRight(strings.TrimSpace(base), "/")
	if base == "" {
		base = "http://127.0.0.1:8080"
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("service URL %q: must be http:// or https:// with a host", base)
	}
	token, err := operatorToken(env, f.tokenFile)
	if err != nil {
		return nil, err
	}
	return &adminClient{base: base, token: token, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

func operatorToken(env Env, tokenFile string) (string, error) {
	if tokenFile == "" {
		token, err := config.Secret(env.Getenv, "CONSENSUS_OPERATOR_TOKEN")
		if err != nil || token != "" {
			return token, err
		}
	}
	file := tokenFile
	if file == "" {
		file = defaultOperatorTokenFile
	}
	b, err := os.ReadFile(file)
	switch {
	case err != nil && tokenFile != "":
		return "", fmt.Errorf("--token-file: %w", err)
	case err != nil:
		return "", fmt.Errorf("no operator token: set CONSENSUS_OPERATOR_TOKEN or CONSENSUS_OPERATOR_TOKEN_FILE, or pass --token-file (tried %s)", file)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("no operator token: %s is empty", file)
	}
	return token, nil
}

// do sends a request and decodes a JSON answer. A failed connection is
// returned as the *url.Error the top level describes ("cannot reach …"); a
// problem answer becomes a *ProblemError.
func (c *adminClient) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json, application/problem+json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return newProblemError(method, path, resp, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not JSON (HTTP %d)", method, path, resp.StatusCode)
	}
	return nil
}

// withHint adds a hint line to a refusal with the given status: the service
// answers a generic 404, and the command knows the likely mistake.
func withHint(err error, status int, hint string) error {
	var p *ProblemError
	if errors.As(err, &p) && p.Status == status {
		p.Hint = hint
	}
	return err
}

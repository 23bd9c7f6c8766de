package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/audit"
	"github.com/consensus-md/consensus/internal/cli/command"
)

func adminKeys(env Env, f *adminFlags) *cobra.Command {
	keys := &cobra.Command{
		Use:   "keys COMMAND",
		Short: "Create, list and revoke the workspace's API keys",
		Long: `Manage the API keys of the credential's workspace (scope keys:manage). A key's
token (cok_...) is printed once, when it is created; the service keeps only
its hash. A key can be given only scopes the credential creating it holds.`,
		Example: `  consensus admin keys create --name ci --scope agreements:read
  consensus admin keys list
  consensus admin keys revoke 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b`,
		Args: command.AnyGroupArgs,
		RunE: command.Group,
	}
	var name, expires string
	var scopes []string
	var out outputFlag
	create := &cobra.Command{
		Use:   "create --name NAME --scope SCOPE [--scope SCOPE...] [--expires TIME]",
		Short: "Create an API key and print its token once",
		Long: `Create an API key holding the given scopes: agreements:read, agreements:write,
participants:manage, keys:manage, operators:manage, audit:read. Without
--expires the key does not expire; a date (2027-06-30) means its start, in UTC.
The token is printed this once.`,
		Example: `  consensus admin keys create --name ci --scope agreements:read --expires 2027-06-30
  consensus admin keys create --name ci --scope agreements:read --expires 2027-06-30T18:00:00+02:00
  consensus admin keys create --name deploy --scope agreements:write --scope agreements:read --output json | jq -r .token`,
		Args: command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if name == "" || len(scopes) == 0 {
				return command.Usagef("--name and at least one --scope are required")
			}
			body := map[string]any{"name": name, "scopes": scopes}
			if expires != "" {
				at, err := expiry(expires)
				if err != nil {
					return err
				}
				body["expiresAt"] = at
			}
			b, err := json.Marshal(body)
			if err != nil {
				return err
			}
			client, err := newAdminClient(env, f)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := client.do(c.Context(), "POST", "/api/v1/admin/keys", b, &raw); err != nil {
				return err
			}
			return output(env, out, raw, func(w io.Writer, raw json.RawMessage) error {
				var k keyJSON
				if err := json.Unmarshal(raw, &k); err != nil {
					return err
				}
				tw := newTable(w)
				fmt.Fprintf(tw, "key\t%s\t%s\n", k.ID, k.Name)
				fmt.Fprintf(tw, "scopes\t%s\n", strings.Join(k.Scopes, " "))
				fmt.Fprintf(tw, "expires\t%s\n", orDash(k.ExpiresAt))
				fmt.Fprintf(tw, "token\t%s\n", k.Token)
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(env.Stderr, "consensus: the token is shown this once; store it now")
				return nil
			})
		},
	}
	create.Flags().StringVar(&name, "name", "", "what the key is for, one line (required)")
	create.Flags().StringArrayVar(&scopes, "scope", nil, "a `SCOPE` the key holds; repeat for more (at least one)")
	create.Flags().StringVar(&expires, "expires", "", "when the key stops working: a date (2027-06-30, its start in UTC) or an instant (2027-06-30T12:00:00Z) (`TIME`); default never")
	out.register(create)

	var listOut outputFlag
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the workspace's API keys, never their tokens",
		Long:    `List every key of the workspace, revoked ones included: id, name, scopes, expiry, last use (recorded at most once a minute) and revocation.`,
		Example: "  consensus admin keys list\n  consensus admin keys list --output json | jq -r '.keys[] | select(.revokedAt == null) | .id'",
		Args:    command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			client, err := newAdminClient(env, f)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := client.do(c.Context(), "GET", "/api/v1/admin/keys", nil, &raw); err != nil {
				return err
			}
			return output(env, listOut, raw, func(w io.Writer, raw json.RawMessage) error {
				var l struct{ Keys []keyJSON }
				if err := json.Unmarshal(raw, &l); err != nil {
					return err
				}
				tw := newTable(w)
				fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tEXPIRES\tLAST USED\tREVOKED")
				for _, k := range l.Keys {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, strings.Join(k.Scopes, ","), orDash(k.ExpiresAt), orDash(k.LastUsedAt), orDash(k.RevokedAt))
				}
				return tw.Flush()
			})
		},
	}
	listOut.register(list)

	var delOut outputFlag
	del := &cobra.Command{
		Use:     "revoke KEY_ID",
		Aliases: []string{"delete"},
		Short:   "Revoke an API key at once",
		Long:    `Revoke a key: its next request, on any replica, is refused (401 key-revoked). Revoking twice keeps the first time. (delete is another name of this command.)`,
		Example: "  consensus admin keys revoke 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b",
		Args:    command.Args("KEY_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			client, err := newAdminClient(env, f)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := client.do(c.Context(), "DELETE", "/api/v1/admin/keys/"+url.PathEscape(args[0]), nil, &raw); err != nil {
				return err
			}
			return output(env, delOut, raw, func(w io.Writer, raw json.RawMessage) error {
				var k keyJSON
				if err := json.Unmarshal(raw, &k); err != nil {
					return err
				}
				_, err := fmt.Fprintf(w, "key %s (%s) revoked at %s\n", k.ID, k.Name, orDash(k.RevokedAt))
				return err
			})
		},
	}
	delOut.register(del)
	keys.AddCommand(create, list, del)
	return keys
}

type keyJSON struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Scopes     []string `json:"scopes"`
	ExpiresAt  *string  `json:"expiresAt"`
	LastUsedAt *string  `json:"lastUsedAt"`
	RevokedAt  *string  `json:"revokedAt"`
	Token      string   `json:"token"`
}

func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func adminAudit(env Env, f *adminFlags) *cobra.Command {
	var after int64
	var limit int
	var all bool
	var filter auditFilter
	var out outputFlag
	c := &cobra.Command{
		Use:   "audit",
		Short: "Read the workspace's audit log",
		Long: `Read the audit log of the credential's workspace (scope audit:read), oldest
first, after the entry --after (a seq). On a terminal it is a table; with
--output json (or when stdout is not a terminal) one JSON entry per line,
exactly as the service sent it, which 'consensus verify audit FILE' checks.
With --all every page is read, to export the whole chain. --actor, --action
and --agreement keep only the entries matching all those given (the service
filters, so pages stay full); a filtered export has gaps in the chain, so
'consensus verify audit' fails on it. A table, and whatever is shown on a
terminal, writes control characters and bidirectional overrides as JSON
escapes (\u001b, \u202e): an entry cannot recolour or reorder the screen.`,
		Example: `  consensus admin audit
  consensus admin audit --after 120 --limit 50
  consensus admin audit --action agreement.create --actor "ci reader"
  consensus admin audit --all --output json > audit.jsonl && consensus verify audit audit.jsonl`,
		Args: command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if c.Flags().Changed("limit") && (limit < 1 || limit > 1000) {
				return command.Usagef("--limit: must be from 1 to 1000, got %d", limit)
			}
			if after < 0 {
				return command.Usagef("--after: must be 0 or more")
			}
			if filter.agreement != "" {
				if _, err := uuid.Parse(filter.agreement); err != nil {
					return command.Usagef("--agreement: want an agreement id (a UUID), got %q", filter.agreement)
				}
			}
			client, err := newAdminClient(env, f)
			if err != nil {
				return err
			}
			var entries []json.RawMessage
			for {
				page, err := auditPage(c.Context(), client, after, limit, filter)
				if err != nil {
					return err
				}
				entries = append(entries, page.Entries...)
				if !all || page.NextAfter == nil {
					if !all && page.NextAfter != nil {
						fmt.Fprintf(env.Stderr, "more: consensus admin audit --after %d\n", *page.NextAfter)
					}
					break
				}
				after = *page.NextAfter
			}
			if out == "json" || (out == "" && !isTerminal(env.Stdout)) {
				for _, e := range entries {
					if _, err := fmt.Fprintf(env.Stdout, "%s\n", e); err != nil {
						return err
					}
				}
				return nil
			}
			tw := newTable(env.Stdout)
			fmt.Fprintln(tw, "SEQ\tAT\tACTOR\tACTION\tTARGETS\tRESULT\tCLIENT")
			for _, raw := range entries {
				var e audit.Entry
				if err := json.Unmarshal(raw, &e); err != nil {
					return err
				}
				var targets []string
				for _, k := range []string{"agreementId", "participantId", "invitationId", "keyId", "operatorId", "workspaceId"} {
					if v, ok := e.Targets[k]; ok {
						targets = append(targets, k+"="+v)
					}
				}
				fmt.Fprintf(tw, "%d\t%s\t%s %s\t%s\t%s\t%s\t%s\n", e.Seq, e.At, e.Actor.Kind, e.Actor.Name, e.Action, strings.Join(targets, " "), e.Result, e.ClientAddress)
			}
			return tw.Flush()
		},
	}
	c.Flags().Int64Var(&after, "after", 0, "start after the entry with this `SEQ` (default 0, the first)")
	c.Flags().IntVar(&limit, "limit", 0, "entries per page, 1 to 1000 (the service's default is 100)")
	c.Flags().BoolVar(&all, "all", false, "read every page, to the end of the log")
	c.Flags().StringVar(&filter.actor, "actor", "", "only entries whose actor's id is `ACTOR`, or whose name contains it (any case)")
	c.Flags().StringVar(&filter.action, "action", "", "only entries of this `ACTION`, such as agreement.create or key.revoke")
	c.Flags().StringVar(&filter.agreement, "agreement", "", "only entries naming this agreement `ID`")
	out.register(c)
	return c
}

// auditFilter is what the service keeps of the log: the entries matching
// every field set.
type auditFilter struct{ actor, action, agreement string }

type auditPageJSON struct {
	Entries   []json.RawMessage `json:"entries"`
	NextAfter *int64            `json:"nextAfter"`
}

func auditPage(ctx context.Context, client *adminClient, after int64, limit int, f auditFilter) (*auditPageJSON, error) {
	q := url.Values{}
	q.Set("after", fmt.Sprint(after))
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	for k, v := range map[string]string{"actor": f.actor, "action": f.action, "agreementId": f.agreement} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var page auditPageJSON
	if err := client.do(ctx, "GET", "/api/v1/admin/audit?"+q.Encode(), nil, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// expiry reads --expires: a date (its start, in UTC) or an RFC 3339
// instant, sent as the instant in UTC, in whole seconds.
func expiry(v string) (string, error) {
	if d, err := time.Parse(time.DateOnly, v); err == nil {
		return d.UTC().Format(time.RFC3339), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return "", command.Usagef("--expires: must be a date such as 2027-06-30 or an instant such as 2027-06-30T12:00:00Z, got %q", v)
	}
	return t.UTC().Truncate(time.Second).Format(time.RFC3339), nil
}

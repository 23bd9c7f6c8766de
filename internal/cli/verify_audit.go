package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/audit"
	"github.com/consensus-md/consensus/internal/cli/command"
	"github.com/consensus-md/consensus/internal/strictjson"
)

func verifyAuditCommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "audit FILE",
		Short: "Check the hash chain of an exported audit log",
		Long: `Check an audit log exported with 'consensus admin audit --all --output json'
(one entry per line; a JSON array or a page of GET /api/v1/admin/audit is
accepted too): every entry's hash is recomputed from its contents (SHA-256 of
its RFC 8785 canonical JSON without hash), each prev must be the hash before
it, seq must count up by one within one workspace, and a log starting at seq
1 must start from 64 zeros. Prints the entry count and the head hash; exit
status 1 names the first entry that fails.`,
		Example: `  consensus admin audit --all --output json > audit.jsonl
  consensus verify audit audit.jsonl`,
		Args: command.Args("FILE"),
		RunE: func(_ *cobra.Command, args []string) error {
			entries, err := readAuditFile(args[0])
			if err != nil {
				return err
			}
			if len(entries) == 0 {
				return fmt.Errorf("%s: no audit entries", args[0])
			}
			head, err := audit.Verify(entries)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			fmt.Fprintf(env.Stdout, "ok: %d entries of workspace %s, seq %d to %d, head %s\n", len(entries), entries[0].WorkspaceID,
				entries[0].Seq, entries[len(entries)-1].Seq, head)
			return nil
		},
	}
}

// readAuditFile reads entries as JSON lines, a JSON array, or an audit
// page, strictly (strictjson): an entry is read as jq or Python would read
// it or refused, so the hash checked covers exactly what a reader sees. A
// member twice, a member no entry has (a name differing from a real one
// only by case included), null, invalid UTF-8 or lone surrogates are
// refused, each naming the line or the entry.
func readAuditFile(file string) ([]audit.Entry, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(b)
	if bytes.HasPrefix(trimmed, []byte("[")) {
		var raw []jsontext.Value
		if err := strictjson.Into(trimmed, &raw); err != nil {
			return nil, fmt.Errorf("%s: not a JSON array of audit entries: %s", file, strictProblem(err))
		}
		return auditEntries(file, "entry", raw)
	}
	var page struct {
		Entries    *[]jsontext.Value `json:"entries"`
		NextAfter  *int64            `json:"nextAfter"`
		NextBefore *int64            `json:"nextBefore"`
	}
	if bytes.HasPrefix(trimmed, []byte("{")) && isPage(trimmed) {
		if err := strictjson.Into(trimmed, &page); err != nil || page.Entries == nil {
			return nil, fmt.Errorf("%s: not a page of audit entries: %s", file, strictProblem(err))
		}
		return auditEntries(file, "entry", *page.Entries)
	}
	var raw []jsontext.Value
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		raw = append(raw, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return auditEntries(file, "line", raw)
}

// isPage reports whether b, one JSON object, has an entries member at its
// top level (a page of GET /api/v1/admin/audit) rather than being one line
// of entries.
func isPage(b []byte) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return false
		}
		if name.String() == "entries" {
			return true
		}
		if err := dec.SkipValue(); err != nil {
			return false
		}
	}
	return false
}

// auditEntries decodes each raw entry strictly; blank lines are skipped,
// and a failure names the unit (line or entry) by its number from 1.
func auditEntries(file, unit string, raw []jsontext.Value) ([]audit.Entry, error) {
	var es []audit.Entry
	for i, r := range raw {
		if len(bytes.TrimSpace(r)) == 0 {
			continue
		}
		var e audit.Entry
		if err := strictjson.Unmarshal(r, &e); err != nil {
			return nil, fmt.Errorf("%s: %s %d: not an audit entry: %s", file, unit, i+1, strictProblem(err))
		}
		es = append(es, e)
	}
	return es, nil
}

// strictProblem words a strictjson error without quoting the file, whose
// text may hold terminal escapes.
func strictProblem(err error) string {
	var null *strictjson.NullError
	var sem *json.SemanticError
	switch {
	case err == nil:
		return "it has no entries member"
	case errors.Is(err, jsontext.ErrDuplicateName):
		return "a member name appears twice in one object"
	case errors.As(err, &null):
		return "a member is null"
	case errors.Is(err, json.ErrUnknownName):
		return "a member no audit entry has (member names are case-sensitive)"
	case errors.As(err, &sem):
		return "a member has a value of the wrong type"
	default:
		return "not valid JSON (RFC 8259, valid UTF-8, no lone surrogates)"
	}
}

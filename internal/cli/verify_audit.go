package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/audit"
	"github.com/consensus-md/consensus/internal/cli/command"
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

// readAuditFile reads entries as JSON lines, a JSON array, or an audit page.
func readAuditFile(file string) ([]audit.Entry, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(b)
	if bytes.HasPrefix(trimmed, []byte("[")) {
		var es []audit.Entry
		return es, json.Unmarshal(trimmed, &es)
	}
	var page struct {
		Entries *[]audit.Entry `json:"entries"`
	}
	if json.Unmarshal(trimmed, &page) == nil && page.Entries != nil {
		return *page.Entries, nil
	}
	var es []audit.Entry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e audit.Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%s:%d: not an audit entry: %w", file, n, err)
		}
		es = append(es, e)
	}
	return es, sc.Err()
}

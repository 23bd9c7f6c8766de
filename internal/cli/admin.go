package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

type adminClient struct {
	base  string
	token string
	http  *http.Client
}

func newAdminClient(env Env) (*adminClient, error) {
	base := strings.TrimRight(env.Getenv("CONSENSUS_URL"), "/")
	if base == "" {
		base = "http://127.0.0.1:8080"
	}
	token := strings.TrimSpace(env.Getenv("CONSENSUS_OPERATOR_TOKEN"))
	if token == "" {
		file := env.Getenv("CONSENSUS_OPERATOR_TOKEN_FILE")
		if file == "" {
			file = ".data/operator-token"
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("no operator token: set CONSENSUS_OPERATOR_TOKEN or CONSENSUS_OPERATOR_TOKEN_FILE (tried %s)", file)
		}
		token = strings.TrimSpace(string(b))
	}
	return &adminClient{base: base, token: token, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// do sends a request and decodes a JSON answer; a problem answer becomes an
// error quoting its status, code and detail.
func (c *adminClient) do(method, path string, body []byte, out any) error {
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var p struct{ Code, Detail string }
		_ = json.Unmarshal(b, &p)
		return fmt.Errorf("%s %s: HTTP %d %s: %s", method, path, resp.StatusCode, p.Code, p.Detail)
	}
	return json.Unmarshal(b, out)
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

func runAdmin(args []string, env Env) error {
	if len(args) == 0 {
		return &usageError{"admin needs a subcommand: create, list, get, revoke, resend"}
	}
	sub, args := args[0], args[1:]
	c, err := newAdminClient(env)
	if err != nil {
		return err
	}
	var out json.RawMessage
	switch sub {
	case "create":
		file, rest, err := flagValue(args, "-f", "--file")
		if err != nil {
			return err
		}
		if file == "" || len(rest) != 0 {
			return &usageError{"admin create needs -f FILE (use - for standard input)"}
		}
		var body []byte
		if file == "-" {
			body, err = io.ReadAll(env.Stdin)
		} else {
			body, err = os.ReadFile(file)
		}
		if err != nil {
			return err
		}
		if err := c.do("POST", "/api/v1/admin/agreements", body, &out); err != nil {
			return err
		}
	case "list":
		limit, rest, err := flagValue(args, "--limit")
		if err != nil {
			return err
		}
		cursor, rest, err := flagValue(rest, "--cursor")
		if err != nil || len(rest) != 0 {
			return &usageError{"admin list takes only --limit and --cursor"}
		}
		q := url.Values{}
		if limit != "" {
			q.Set("limit", limit)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		path := "/api/v1/admin/agreements"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		if err := c.do("GET", path, nil, &out); err != nil {
			return err
		}
	case "get", "revoke", "resend":
		if len(args) != 1 {
			return &usageError{"admin " + sub + " needs exactly one id"}
		}
		id := url.PathEscape(args[0])
		method, path := "GET", "/api/v1/admin/agreements/"+id
		switch sub {
		case "revoke":
			method, path = "POST", "/api/v1/admin/participants/"+id+"/revoke"
		case "resend":
			method, path = "POST", "/api/v1/admin/invitations/"+id+"/resend"
		}
		if err := c.do(method, path, nil, &out); err != nil {
			return err
		}
	default:
		return &usageError{fmt.Sprintf("unknown admin subcommand %q", sub)}
	}
	return printJSON(env.Stdout, out)
}

package httpapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	consensus "github.com/consensus-md/consensus"
)

// TestOperatorRoutesMatchTheContract: every operator route the server
// registers is an operation of openapi.json under the same method and
// path, whose x-required-scope is the scope the route checks, and every
// operator operation of the contract is registered.
func TestOperatorRoutesMatchTheContract(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(consensus.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	contract := map[string]string{}
	for path, item := range doc.Paths {
		if !strings.HasPrefix(path, "/api/v1/admin/") {
			continue
		}
		for method, raw := range item {
			var op struct {
				Scope string `json:"x-required-scope"`
			}
			if method == "parameters" || json.Unmarshal(raw, &op) != nil {
				continue
			}
			contract[strings.ToUpper(method)+" "+path] = op.Scope
		}
	}
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	for _, rt := range s.routes() {
		if rt.Credential != CredentialOperator {
			continue
		}
		key := rt.Method + " " + rt.Pattern
		scope, ok := contract[key]
		switch {
		case !ok:
			t.Errorf("%s is served but not in openapi.json", key)
		case scope != string(rt.Scope):
			t.Errorf("%s checks the scope %s; openapi.json states %q", key, rt.Scope, scope)
		}
		delete(contract, key)
	}
	for key := range contract {
		t.Errorf("openapi.json lists %s, which the server does not serve", key)
	}
}

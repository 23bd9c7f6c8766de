package cli

import (
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/translog"
)

// TestAdminGetProof: --proof asks the operator's proof route and prints the
// bundle as JSON (as served, for a verifier) or, on request, a summary of
// it; proof-not-ready is the service's problem with a hint to run again.
// A canned answer, not servertest: internal/e2e fetches a real proof.
func TestAdminGetProof(t *testing.T) {
	t.Parallel()
	const id = "0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
	seq, head, digest := int64(2), hex64, hex64
	leaf, err := translog.Leaf{Type: translog.LeafType, AgreementID: id, Kind: translog.KindRecord, Revision: 1,
		Seq: &seq, ChainHead: &head, Digest: &digest, At: "2026-01-02T00:00:00.000000Z"}.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := translog.NewSigner("consensus.test/log", ed25519.NewKeyFromSeed(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := signer.SignCheckpoint(translog.Checkpoint{Origin: "consensus.test/log", Size: 1, Root: tlog.RecordHash(leaf)})
	if err != nil {
		t.Fatal(err)
	}
	bundle, _ := json.Marshal(translog.NewProof(leaf, 0, nil, signed, signer.VerifierKey()))

	paths := make(chan string, 4)
	var notReady atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path
		if notReady.Load() {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"type":"https://consensus.test/problems/proof-not-ready","title":"Record not in the log yet","status":404,"detail":"Nothing is available at this address.","code":"proof-not-ready"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(bundle)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"CONSENSUS_URL": srv.URL, "CONSENSUS_OPERATOR_TOKEN": "cso_test-operator-token-0123456789"}

	code, out, errb := run(t, env, "", "admin", "get", id, "--proof")
	if code != 0 || <-paths != "/api/v1/admin/agreements/"+id+"/record/proof" {
		t.Fatalf("exit %d: %s", code, errb)
	}
	p, err := translog.ParseProof([]byte(out))
	if err != nil || p.LeafIndex != 0 || p.LogKey != signer.VerifierKey() {
		t.Fatalf("the printed bundle is not the served proof: %v\n%s", err, out)
	}
	v, _ := translog.NewVerifier(signer.VerifierKey())
	if r := translog.VerifyProof(p, translog.VerifyOptions{LogKey: v}); !r.OK() {
		t.Fatalf("the printed bundle does not verify: %v", r.FailedChecks())
	}

	code, out, errb = run(t, env, "", "admin", "get", id, "--proof", "--output", "table")
	<-paths
	for _, want := range []string{id, "SHA-256 " + hex64 + ", revision 1, 2 events", "0 of the 1 leaves of consensus.test/log", "signed by  consensus.test/log", "consensus verify record"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, the summary lacks %q:\n%s%s", code, want, out, errb)
		}
	}

	notReady.Store(true)
	code, out, errb = run(t, env, "", "admin", "get", id, "--proof")
	<-paths
	if code != 1 || out != "" || !strings.Contains(errb, "proof-not-ready") || !strings.Contains(errb, "run the command again") {
		t.Fatalf("not ready: exit %d\nstdout %s\nstderr %s", code, out, errb)
	}
}

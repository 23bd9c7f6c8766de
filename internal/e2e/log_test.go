package e2e

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/cli"
	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/logmonitor"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/servertest"
	"github.com/consensus-md/consensus/internal/translog"
)

// logFixture is a service whose log a litewitness cosigns.
type logFixture struct {
	s       *server
	w       *litewitness
	logKey  note.Verifier
	logVKey string
	witness note.Verifier
}

const testLogOrigin = "consensus.test/log"

func startWitnessedLog(t *testing.T) *logFixture {
	t.Helper()
	w := startLitewitness(t, "witness.test/w1")
	seed := strings.Repeat("4c", 32)
	seedBytes, _ := hex.DecodeString(seed)
	signer, err := translog.NewSigner(testLogOrigin, config.Log{}.LogKeyFor(ed25519.NewKeyFromSeed(seedBytes)))
	if err != nil {
		t.Fatal(err)
	}
	w.addLog(t, testLogOrigin, signer.VerifierKey())
	s := startServer(t, servertest.Options{SigningKey: seed, Settings: map[string]string{
		"CONSENSUS_LOG_ORIGIN":    testLogOrigin,
		"CONSENSUS_LOG_WITNESSES": w.Key + " " + w.URL,
		"CONSENSUS_LOG_INTERVAL":  "100ms",
	}})
	lk, err := translog.NewVerifier(signer.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	wk, err := translog.NewVerifier(w.Key)
	if err != nil {
		t.Fatal(err)
	}
	return &logFixture{s: s, w: w, logKey: lk, logVKey: signer.VerifierKey(), witness: wk}
}

// reach drives a new two-agent room to reached and returns one agent.
func (f *logFixture) reach(t *testing.T, title string) *agent {
	t.Helper()
	c := f.s.create(title, f.s.future())
	a := f.s.agent(c.Participants[0].InvitationID).join()
	b := f.s.agent(c.Participants[1].InvitationID).join()
	expect(t, a.post("a-agree-"+title, "agree", ""), 201, "")
	expect(t, b.post("b-agree-"+title, "agree", ""), 201, "")
	return a
}

// get fetches url with headers outside the contract client, answering
// the status and body.
func get(t *testing.T, url string, headers map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// proof waits until a's record proof carries the witness's cosignature.
func (f *logFixture) proof(t *testing.T, a *agent) (translog.Proof, []byte) {
	t.Helper()
	var p translog.Proof
	var record []byte
	waitFor(t, func() bool {
		status, b := get(t, f.s.URL+f.s.agentPath(a.inv.InvitationID, "record")+"/proof", a.auth())
		if status != http.StatusOK {
			return false
		}
		var err error
		if p, err = translog.ParseProof(b); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(p.Checkpoint, "— "+f.w.Name+" ")
	})
	status, record := get(t, f.s.URL+f.s.agentPath(a.inv.InvitationID, "record"), a.auth())
	if status != http.StatusOK {
		t.Fatalf("record: %d %s", status, record)
	}
	return p, record
}

func (f *logFixture) verify(p translog.Proof, record []byte) translog.Result {
	return translog.VerifyProof(p, translog.VerifyOptions{LogKey: f.logKey, Record: record,
		Witnesses: []note.Verifier{f.witness}, MinCosignatures: 1})
}

// TestLogWitnessedAndRewriteRefused drives rooms to outcomes with
// litewitness cosigning: every record's proof verifies with the witness's
// key. Then, as a dishonest operator would, it rewrites a finished room's
// chain head and the log's leaf for it (recomputing the stored hashes):
// the witness refuses the next checkpoint, the service alerts (log line,
// metric, /readyz), and the old proof still verifies against the old
// cosigned checkpoint.
func TestLogWitnessedAndRewriteRefused(t *testing.T) {
	f := startWitnessedLog(t)
	var agents []*agent
	for i := range 3 {
		agents = append(agents, f.reach(t, fmt.Sprintf("logged-%d", i)))
	}
	proofs := make([]translog.Proof, len(agents))
	records := make([][]byte, len(agents))
	for i, a := range agents {
		proofs[i], records[i] = f.proof(t, a)
		if res := f.verify(proofs[i], records[i]); !res.OK() {
			t.Fatalf("proof %d does not verify: %v", i, res.FailedChecks())
		}
	}
	// Both published verifiers accept the first, with the witness's key.
	dir := t.TempDir()
	recFile, proofFile := filepath.Join(dir, "record.json"), filepath.Join(dir, "proof.json")
	pb, _ := json.Marshal(proofs[0])
	if err := os.WriteFile(recFile, records[0], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(proofFile, pb, 0o600); err != nil {
		t.Fatal(err)
	}
	verifyArgs := []string{recFile, "--proof", proofFile, "--log-key", f.logVKey, "--witness", f.w.Key, "--witnesses", "1"}
	nodeOut, err := exec.Command("node", append([]string{"../../tools/verify-record.mjs"}, verifyArgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("the Node verifier refuses the proof: %v\n%s", err, nodeOut)
	}
	t.Logf("proof bundle:\n%s\nverify-record.mjs:\n%s", pb, nodeOut)
	var out, errb strings.Builder
	if code := cli.Main(append([]string{"verify", "record"}, verifyArgs...), cli.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""),
		Getenv: func(string) string { return "" }}); code != 0 {
		t.Fatalf("consensus verify record --proof exits %d:\n%s%s", code, out.String(), errb.String())
	}
	// The checkpoint the service serves carries the witness's cosignature.
	status, cp := get(t, f.s.URL+"/log/checkpoint", nil)
	if status != 200 || !strings.Contains(string(cp), "— "+f.w.Name+" ") {
		t.Fatalf("checkpoint: %d %s", status, cp)
	}

	// A monitor has seen the honest log.
	state := filepath.Join(t.TempDir(), "monitor.json")
	if rep := f.monitor(t, state); len(rep.Failed()) > 0 {
		t.Fatalf("the monitor fails on the honest log:\n%s", reportText(rep))
	}

	// The rewrite: room 0's head and its record leaf, the tree recomputed.
	ctx := context.Background()
	db, err := pgx.Connect(ctx, pgtest.ServiceURL(f.s.DatabaseURL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	leaf, err := translog.ParseLeaf(mustLeaf(t, proofs[0]))
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Repeat("f", 64)
	leaf.ChainHead = &forged
	body, err := leaf.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE agreements SET head_hash = $2 WHERE id = $1`, leaf.AgreementID, forged); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE log_rooms SET head_hash = $2 WHERE agreement_id = $1`, leaf.AgreementID, forged); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE log_leaves SET body = $2 WHERE idx = $1`, proofs[0].LeafIndex, body); err != nil {
		t.Fatal(err)
	}
	rehash(t, ctx, db)

	// The next integration signs a checkpoint the witness must refuse.
	f.reach(t, "after-rewrite")
	waitFor(t, func() bool {
		return strings.Contains(f.s.Logs.String(), "a witness refused the checkpoint")
	})
	for _, l := range strings.Split(f.s.Logs.String(), "\n") {
		if strings.Contains(l, "witness") {
			t.Log(l)
		}
	}
	_, ready := get(t, f.s.OpsURL+"/readyz", nil)
	var probe struct {
		Status string `json:"status"`
		Log    struct {
			Witnesses []struct{ Name, State string } `json:"witnesses"`
		} `json:"log"`
	}
	if err := json.Unmarshal(ready, &probe); err != nil || probe.Status != "ready" || len(probe.Log.Witnesses) != 1 || probe.Log.Witnesses[0].State != "refused" {
		t.Fatalf("/readyz should stay ready and report the refusal: %s", ready)
	}
	_, metrics := get(t, f.s.OpsURL+"/metrics", nil)
	// The series is served at 0 from the start: the refusal must count.
	if regexp.MustCompile(`(?m)^consensus_log_witness_failures_total\{result="refused",witness="witness.test/w1"\} [1-9]`).Find(metrics) == nil {
		t.Fatalf("the refusal is not counted:\n%s", metrics)
	}
	// Appends go on regardless of the witness.
	f.reach(t, "still-appending")
	// The monitor sees the rewritten tree and names the rewritten leaf.
	rep := f.monitor(t, state)
	if want := fmt.Sprintf("first bad index %d", proofs[0].LeafIndex); len(rep.Failed()) == 0 || !strings.Contains(reportText(rep), want) {
		t.Fatalf("the monitor should fail naming %q:\n%s", want, reportText(rep))
	}
	// The proof issued before the rewrite still verifies on its own.
	if res := f.verify(proofs[0], records[0]); !res.OK() {
		t.Fatalf("the old proof no longer verifies: %v", res.FailedChecks())
	}
}

// monitor runs consensus log monitor's checks once against the service.
func (f *logFixture) monitor(t *testing.T, state string) *logmonitor.Report {
	t.Helper()
	rep, err := logmonitor.Run(context.Background(), logmonitor.Config{URL: f.s.URL, StatePath: state,
		LogKey: f.logVKey, Witnesses: []note.Verifier{f.witness}})
	if err != nil {
		t.Fatalf("monitor: %v\n%s", err, reportText(rep))
	}
	return rep
}

func reportText(rep *logmonitor.Report) string {
	if rep == nil {
		return "(no report)"
	}
	var b strings.Builder
	_ = rep.Write(&b)
	return b.String()
}

func mustLeaf(t *testing.T, p translog.Proof) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(p.Leaf, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v) // map keys sorted; the leaf has only ASCII strings and integers
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rehash recomputes every stored hash of the log from its leaves, as an
// operator hiding a rewrite would.
func rehash(t *testing.T, ctx context.Context, db *pgx.Conn) {
	t.Helper()
	rows, err := db.Query(ctx, `SELECT body FROM log_leaves ORDER BY idx`)
	if err != nil {
		t.Fatal(err)
	}
	var leaves [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var stored []tlog.Hash
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	for i, b := range leaves {
		hs, err := tlog.StoredHashes(int64(i), b, r)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hs...)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for i, h := range stored {
		if _, err := tx.Exec(ctx, `UPDATE log_hashes SET hash = $2 WHERE idx = $1`, int64(i), h[:]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

package logmonitor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/consensus-md/consensus/internal/logmonitor/logtest"
	"github.com/consensus-md/consensus/internal/translog"
)

func witness(t *testing.T, l *logtest.Log, name string) note.Verifier {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	v, err := translog.WitnessKey(l.Cosign(name, priv))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMonitorCountsCosignatures(t *testing.T) {
	t.Parallel()
	l := logtest.New(t, logtest.NewSigner(t))
	l.Append(leaves(0, 5)...)
	w1, w2 := witness(t, l, "w1.example"), witness(t, l, "w2.example")
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	w3, _ := translog.WitnessKey("w3.example=" + b64key(other.Public().(ed25519.PublicKey)))
	cfg := config(l, statePath(t))
	cfg.Witnesses, cfg.MinCosignatures = []note.Verifier{w1, w2, w3}, 2
	rep := mustRun(t, cfg)
	wantOK(t, rep)
	if out := text(rep); !strings.Contains(out, "2 of the 3 named witnesses cosigned (w1.example, w2.example)") {
		t.Fatalf("cosignatures:\n%s", out)
	}
	cfg.MinCosignatures = 3
	wantFail(t, mustRun(t, cfg), "cosignatures", "2 of the 3", "at least 3")
}

func b64key(pub ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(pub) }

func TestMonitorPinsTheLogKey(t *testing.T) {
	t.Parallel()
	signer, forger := logtest.NewSigner(t), logtest.NewSigner(t)
	l := logtest.New(t, signer)
	l.Append(leaves(0, 5)...)
	state := statePath(t)
	wantOK(t, mustRun(t, config(l, state)))

	// Another key than the pinned one: nothing is checked.
	cfg := config(l, state)
	cfg.LogKey = forger.VerifierKey()
	if _, err := Run(context.Background(), cfg); !IsUnavailable(err) || !strings.Contains(err.Error(), "pinned") {
		t.Fatalf("another key than the pinned one: %v", err)
	}
	// A log of the same name signed by another key: refused.
	forged := logtest.New(t, forger)
	forged.Append(leaves(0, 6)...)
	impostor := config(forged, statePath(t))
	impostor.LogKey = signer.VerifierKey()
	wantFail(t, mustRun(t, impostor), "checkpoint", "not signed by the log's key")
}

func TestMonitorReportsAnUnreachableServer(t *testing.T) {
	t.Parallel()
	cfg := Config{URL: "http://127.0.0.1:1", StatePath: statePath(t), Client: &http.Client{Timeout: time.Second}}
	if _, err := Run(context.Background(), cfg); !IsUnavailable(err) {
		t.Fatalf("want unavailable, got %v", err)
	}
}

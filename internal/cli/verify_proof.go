package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/cli/command"
	"github.com/consensus-md/consensus/internal/translog"
)

// proofFlags are verify record's flags for a consensus-log-proof/v1.
type proofFlags struct {
	file, logKey string
	witnesses    []string
	min          int
	witnessesSet bool // --witnesses was given
}

// options turns the flags into what translog.VerifyProof checks: the log
// key from --log-key or the log member of the --keys document, the
// witness keys, and how many of them must have cosigned.
func (f proofFlags) options(keysFile string) (translog.VerifyOptions, error) {
	var opt translog.VerifyOptions
	if f.file == "" {
		if f.logKey != "" || len(f.witnesses) > 0 || f.witnessesSet {
			return opt, command.Usagef("--log-key, --witness and --witnesses check a --proof")
		}
		return opt, nil
	}
	for _, w := range f.witnesses {
		v, err := translog.WitnessKey(w)
		if err != nil {
			return opt, command.Usagef("--witness: %v", err)
		}
		opt.Witnesses = append(opt.Witnesses, v)
	}
	opt.MinCosignatures = len(opt.Witnesses)
	if f.witnessesSet {
		if f.min < 0 || f.min > len(opt.Witnesses) {
			return opt, command.Usagef("--witnesses %d: want 0 to the %d --witness given", f.min, len(opt.Witnesses))
		}
		opt.MinCosignatures = f.min
	}
	vkey := f.logKey
	if vkey == "" && keysFile != "" {
		var err error
		if vkey, err = publishedLogKey(keysFile); err != nil {
			return opt, err
		}
	}
	if vkey == "" {
		return opt, command.Usagef("--proof needs the log's key: --log-key VKEY, or --keys with the log member of /.well-known/consensus-keys")
	}
	v, err := translog.NewVerifier(vkey)
	if err != nil {
		if f.logKey != "" {
			return opt, command.Usagef("--log-key: %v", err)
		}
		return opt, unreadable(fmt.Errorf("%s: log.verifierKey: %w", keysFile, err))
	}
	opt.LogKey = v
	return opt, nil
}

// publishedLogKey reads log.verifierKey of a saved
// /.well-known/consensus-keys document ("" when it has no log member).
func publishedLogKey(keysFile string) (string, error) {
	b, err := os.ReadFile(keysFile)
	if err != nil {
		return "", unreadable(err)
	}
	var doc struct {
		Log *struct {
			VerifierKey string `json:"verifierKey"`
		} `json:"log"`
	}
	if _, err := canon.Transform(b); err != nil {
		return "", unreadable(fmt.Errorf("%s: %w", keysFile, err))
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", unreadable(fmt.Errorf("%s: %w", keysFile, err))
	}
	if doc.Log == nil {
		return "", nil
	}
	return doc.Log.VerifierKey, nil
}

// writeProof prints the proof's checks as the record's ("ok" or "FAIL"
// with what was found), then a PROOF line.
func writeProof(w io.Writer, r translog.Result, p translog.Proof) error {
	var b strings.Builder
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "%s %s: %s\n", mark, c.Name, c.Detail)
	}
	switch {
	case !r.OK():
		fmt.Fprintf(&b, "PROOF: FAILED (%s)\n", strings.Join(r.FailedChecks(), ", "))
	case len(r.Cosigned) > 0:
		fmt.Fprintf(&b, "PROOF: VERIFIED: leaf %d of %d in %s, cosigned by %s\n", p.LeafIndex, r.Checkpoint.Size, r.Checkpoint.Origin, strings.Join(r.Cosigned, ", "))
	default:
		fmt.Fprintf(&b, "PROOF: VERIFIED: leaf %d of %d in %s, no witness named\n", p.LeafIndex, r.Checkpoint.Size, r.Checkpoint.Origin)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

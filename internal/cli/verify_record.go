package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/cli/command"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/record"
	"github.com/consensus-md/consensus/internal/translog"
)

func verifyRecordCommand(env Env) *cobra.Command {
	var artifact, keys string
	var allowUnauthenticated bool
	var messages []string
	var pf proofFlags
	c := &cobra.Command{
		Use:   "record RECORD.json [--artifact CONSENSUS.md] [--keys JWKS] [--message REPLY.eml]... [--proof PROOF.json [--log-key VKEY] [--witness NAME=KEY]... [--witnesses N]]",
		Short: "Check a consensus-record/v1 offline: digests, chain, signatures, outcome",
		Long: `Check a record downloaded from GET .../record, offline: every locked
revision's revision, Markdown and terms digests, each command against the
revision it names (number and digest), every command digest and chain link,
every keyed participant's Ed25519 signature against the key its claim bound,
the chain head and event count, that the outcome follows from the events by
the last revision's decision rule (unanimity of the required participants, or
a quorum of k of them) under the revision rule (a decision made on an earlier
revision counts only when its terms digest equals the last revision's), the
SHA-256 of CONSENSUS.md (--artifact), and the service's signature with the
issuer's published keys (--keys, a JWKS saved from
<issuer>/.well-known/consensus-keys). An event read from a reply to the
invitation email carries DKIM evidence: its signature is re-checked over the
stored signed header fields with the stored key record, and its domain
against the signed From; --message ties a raw reply email to the event whose
evidence names its SHA-256.

--proof checks the record's consensus-log-proof/v1 bundle from GET
.../record/proof (SPEC §21): leaf (a canonical record leaf),
leaf-matches-record (its digest is the record's SHA-256, and its agreement,
revision, seq, chain head and instant are the record's), log-signature (the
checkpoint is signed by the log's key, from --log-key or from the "log"
member's verifierKey of the --keys document; when it fails nothing after it
is checked), inclusion (the RFC 6962 proof leads from the leaf at its index
to the checkpoint's root), and cosignatures (at least --witnesses N of the
--witness keys cosigned the checkpoint, C2SP tlog-cosignature/v1; N is the
number of --witness given unless set). A witness key is NAME=KEY, KEY the
base64 of its Ed25519 public key, or a whole verifier key. A proof that
verifies authenticates the record by the log's key, with or without --keys.

One line per check: "ok", "FAIL" with what broke, or "skip". Exit status 0
when nothing failed and the service signature verified; 1 when a check
failed (the record's or the proof's); 3 when a file could not be read. Without
--keys the service signature is skipped and the result says NOT
AUTHENTICATED: the record is then only shown to be consistent, not to come
from its issuer, and the exit status is 4 unless --allow-unauthenticated asks
for 0 or a --proof verified.`,
		Example: `  curl -sS -H "Authorization: Consensus-Participant $TOKEN" "$API/record" > record.json
  curl -sS https://consensus.md/.well-known/consensus-keys > keys.json
  consensus verify record record.json --artifact CONSENSUS.md --keys keys.json
  curl -sS -H "Authorization: Consensus-Participant $TOKEN" "$API/record/proof" > proof.json
  consensus verify record record.json --keys keys.json --proof proof.json --witness witness.example/one=eBzXPZfwBitMllvmLuBl7xfG6AEC7uZcwxpYq1A6Lzc=`,
		Args: command.Args("RECORD.json"),
		RunE: func(cmd *cobra.Command, args []string) error {
			pf.witnessesSet = cmd.Flags().Changed("witnesses")
			return verifyRecord(args[0], artifact, keys, messages, allowUnauthenticated, pf, env)
		},
	}
	c.Flags().StringVar(&pf.file, "proof", "", "the record's consensus-log-proof/v1 `FILE` (GET .../record/proof) to check")
	c.Flags().StringVar(&pf.logKey, "log-key", "", "the log's verifier key `VKEY` (name+hash+base64); default: the log member of --keys")
	c.Flags().StringArrayVar(&pf.witnesses, "witness", nil, "a witness whose cosignature counts, `NAME=KEY` (base64 Ed25519 key) or a verifier key (repeatable)")
	c.Flags().IntVar(&pf.min, "witnesses", 0, "how many of the --witness keys must have cosigned, `N` (default: all of them)")
	c.Flags().BoolVar(&allowUnauthenticated, "allow-unauthenticated", false, "exit 0 for a consistent record whose service signature was not checked (no --keys)")
	c.Flags().StringVar(&artifact, "artifact", "", "the downloaded CONSENSUS.md `FILE` to check against the record's sha256")
	c.Flags().StringArrayVar(&messages, "message", nil, "a raw reply email `FILE`, as received, to tie to the event whose evidence names its SHA-256 (repeatable)")
	c.Flags().StringVar(&keys, "keys", "", "the issuer's JWKS `FILE` (/.well-known/consensus-keys) to check the service signature")
	return c
}

// verifyRecord prints the record verifier's report and fails when a check
// failed.
func verifyRecord(file, artifactFile, keysFile string, messageFiles []string, allowUnauthenticated bool, pf proofFlags, env Env) error {
	proofOpt, err := pf.options(keysFile)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return unreadable(err)
	}
	var opt record.Options
	if artifactFile != "" {
		if opt.Artifact, err = os.ReadFile(artifactFile); err != nil {
			return unreadable(err)
		}
	}
	if keysFile != "" {
		b, err := os.ReadFile(keysFile)
		if err != nil {
			return unreadable(err)
		}
		set, err := jwk.ParseSet(b)
		if err != nil {
			return unreadable(fmt.Errorf("%s: %w", keysFile, err))
		}
		opt.Keys = &set
	}
	for _, f := range messageFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return unreadable(err)
		}
		opt.Messages = append(opt.Messages, b)
	}
	var proof translog.Proof
	if pf.file != "" {
		b, err := os.ReadFile(pf.file)
		if err != nil {
			return unreadable(err)
		}
		if proof, err = translog.ParseProof(b); err != nil {
			return unreadable(fmt.Errorf("%s: %w", pf.file, err))
		}
	}
	rep := record.Verify(raw, opt)
	if err := rep.Write(env.Stdout); err != nil {
		return err
	}
	var failed []string
	if !rep.OK() {
		failed = append(failed, "the record does not verify: "+strings.Join(rep.FailedChecks(), ", ")+" failed")
	}
	proofOK := false
	if pf.file != "" {
		proofOpt.Record = raw
		res := translog.VerifyProof(proof, proofOpt)
		if err := writeProof(env.Stdout, res, proof); err != nil {
			return err
		}
		if proofOK = res.OK(); !proofOK {
			failed = append(failed, "the proof does not verify: "+strings.Join(res.FailedChecks(), ", ")+" failed")
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	if !rep.Authenticated() && !proofOK && !allowUnauthenticated {
		return &command.StatusError{Status: command.ExitUnauthenticated,
			Err: errors.New("nothing was authenticated: the record is consistent, but without --keys its service signature was not checked (--allow-unauthenticated accepts that)")}
	}
	return nil
}

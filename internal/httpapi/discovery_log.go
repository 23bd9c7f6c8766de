package httpapi

import "github.com/consensus-md/consensus/internal/agentroute"

// LogCapability names the transparency log (SPEC §21) in the capabilities
// document, offered when the deployment keeps one.
type LogCapability struct {
	Origin        string `json:"origin"`
	VerifierKey   string `json:"verifierKey"`
	Checkpoint    string `json:"checkpoint"`
	Prefix        string `json:"prefix"`
	Proof         string `json:"proof"`
	OperatorProof string `json:"operatorProof"`
	Verifier      string `json:"verifier"`
}

// withLog fills offered.log when the venue keeps a log.
func (s *Server) withLog(c Capabilities) Capabilities {
	k := s.logKey()
	if k == nil {
		return c
	}
	c.Offered.Log = &LogCapability{
		Origin: k.Origin, VerifierKey: k.VerifierKey, Checkpoint: k.Checkpoint, Prefix: s.origin + LogPrefix,
		Proof:         s.origin + agentroute.Pattern + agentroute.RecordProof,
		OperatorProof: s.origin + "/api/v1/admin/agreements/{agreementId}/record/proof",
		Verifier: "consensus verify record RECORD.json --keys KEYS.json --proof PROOF.json [--log-key VKEY] [--witness NAME=KEY]... [--witnesses N], or node verify-record.mjs with the same arguments; " +
			"the log key is taken from the log member of KEYS.json (saved from " + s.origin + "/.well-known/consensus-keys) unless --log-key names it; take the witnesses' keys from the witnesses. " +
			"By hand: see \"Transparency log\" in llms-full.txt",
	}
	return c
}

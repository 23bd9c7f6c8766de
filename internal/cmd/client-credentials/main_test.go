package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const root = "../../.."

// TestGeneratedFilesAreCurrent fails when the committed credential layers
// differ from what openapi.json and the committed Go client generate: run
// `make generate`.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, Contract))
	if err != nil {
		t.Fatal(err)
	}
	client, err := os.ReadFile(filepath.Join(root, GoClient))
	if err != nil {
		t.Fatal(err)
	}
	ts, goSrc, err := Generate(doc, client)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]byte{TSOutput: ts, GoOutput: goSrc} {
		got, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make generate", file)
		}
	}
}

// TestOperationsFollowTheSecurity checks the kinds read from the contract
// for the routes whose credential the guide states.
func TestOperationsFollowTheSecurity(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, Contract))
	if err != nil {
		t.Fatal(err)
	}
	ops, err := Operations(doc)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Operation{}
	for _, o := range ops {
		byID[o.ID] = o
	}
	for id, want := range map[string][]string{
		"exchangeInvitation": {"none", "invite"}, "claimSlot": {"session"}, "readRoom": {"participant"}, "streamRoom": {"participant"},
		"mcp": {"participant"}, "createAgreement": {"operator"}, "getCapabilities": {"none"}, "getSigningKeys": {"none"},
	} {
		if got := byID[id].Kinds; !slices.Equal(got, want) {
			t.Errorf("%s accepts %v, want %v", id, got, want)
		}
	}
	if byID["createAgreement"].Scope != "agreements:write" {
		t.Errorf("createAgreement's scope: %q", byID["createAgreement"].Scope)
	}
}

// TestRefusesWhatItCannotType: a scheme with no kind, a requirement of two
// schemes, an operation without its own security list.
func TestRefusesWhatItCannotType(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown scheme":  `{"paths":{"/x":{"get":{"operationId":"x","security":[{"Cookie":[]}]}}}}`,
		"two schemes":     `{"paths":{"/x":{"get":{"operationId":"x","security":[{"ConsensusInvite":[],"ConsensusSession":[]}]}}}}`,
		"no security":     `{"paths":{"/x":{"get":{"operationId":"x"}}}}`,
		"no operation id": `{"paths":{"/x":{"get":{"security":[]}}}}`,
	} {
		if _, err := Operations([]byte(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	ops, _ := Operations([]byte(`{"paths":{"/x":{"get":{"operationId":"other","security":[]}}}}`))
	if _, err := Go(ops, []byte("package oapiclient\ntype ClientWithResponsesInterface interface {\n\tXWithResponse(reqEditors ...RequestEditorFn) (*int, error)\n}\n")); err == nil || !strings.Contains(err.Error(), "names no operation") {
		t.Errorf("a client method with no operation: %v", err)
	}
}

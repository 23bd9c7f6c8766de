package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"testing/fstest"

	consensus "github.com/consensus-md/consensus"
)

// TestBundleCurrent: the embedded verifier, the one served and run by the
// conformance test, is what bundling today's sources gives.
func TestBundleCurrent(t *testing.T) {
	got, err := Bundle(os.DirFS("../../.."), Entry)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, consensus.VerifyRecord) {
		t.Fatalf("%s is stale: run make generate", Output)
	}
}

// TestDocsStateTheBundle: llms-full.txt states the SHA-256 of the bytes
// served, once.
func TestDocsStateTheBundle(t *testing.T) {
	doc, err := fs.ReadFile(consensus.Web, Docs)
	if err != nil {
		t.Fatal(err)
	}
	m := Stated.FindAllSubmatch(doc, -1)
	sum := sha256.Sum256(consensus.VerifyRecord)
	if len(m) != 1 || string(m[0][2]) != hex.EncodeToString(sum[:]) {
		t.Fatalf("%s does not state the verifier's SHA-256 %x once: run make generate", Docs, sum)
	}
}

// TestBundleScopes: modules keep their private names apart, node: imports
// merge, and forms the bundler does not understand are refused.
func TestBundleScopes(t *testing.T) {
	fsys := fstest.MapFS{
		"main.mjs":  {Data: []byte("#!/usr/bin/env node\n// top\nimport { a } from \"./lib/a.mjs\";\nimport { createHash } from \"node:crypto\";\nconst k = 1;\nconsole.log(a(), createHash(\"sha256\").update(\"x\").digest(\"hex\").length, k);\n")},
		"lib/a.mjs": {Data: []byte("import { createHash, randomBytes } from \"node:crypto\";\nimport { b } from \"./b.mjs\";\nconst k = 2;\nexport function a() { return b() + k + (createHash && randomBytes ? 0 : 1); }\n")},
		"lib/b.mjs": {Data: []byte("const k = 3;\nexport const b = () => k;\n")},
	}
	out, err := Bundle(fsys, "main.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, []byte("#!/usr/bin/env node\n// top\n")) || bytes.Count(out, []byte("from \"node:crypto\"")) != 1 {
		t.Fatalf("bundle:\n%s", out)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required: the verifier is a Node program")
	}
	f := filepath.Join(t.TempDir(), "m.mjs")
	if err := os.WriteFile(f, out, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := exec.Command(node, f).CombinedOutput()
	if err != nil || string(res) != "5 64 1\n" {
		t.Fatalf("bundle ran: %v %q\n%s", err, res, out)
	}
	for name, src := range map[string]string{
		"default import": "import x from \"node:fs\";\n",
		"package import": "import { x } from \"left-pad\";\n",
		"export list":    "const x = 1;\nexport { x };\n",
	} {
		bad := fstest.MapFS{"main.mjs": {Data: []byte("import { y } from \"./m.mjs\";\n")}, "m.mjs": {Data: []byte(src)}}
		if _, err := Bundle(bad, "main.mjs"); err == nil {
			t.Errorf("%s: bundled", name)
		}
	}
}

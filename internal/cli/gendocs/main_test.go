package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestDocsCurrent fails when docs/cli.md or docs/configuration.md differs
// from what the command trees and the settings table generate.
func TestDocsCurrent(t *testing.T) {
	t.Parallel()
	docs, err := documents()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range docs {
		got, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("docs/%s is stale: run `make generate` (go run ./internal/cli/gendocs) and commit it", name)
		}
	}
}

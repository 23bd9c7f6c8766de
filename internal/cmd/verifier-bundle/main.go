// Command verifier-bundle writes tools/dist/verify-record.mjs: the
// standard-library record verifier (tools/verify-record.mjs) and the
// modules it imports as one file, the one the service publishes at
// /tools/verify-record.mjs and the conformance run executes.
//
// Each imported module becomes a function scope that returns its exports,
// so the modules' private names cannot collide; the node: imports of every
// module are merged into one import per specifier at the top. The bundler
// understands only the forms the verifier uses (named imports, export
// before a declaration) and refuses anything else, so a new form fails
// `make generate` rather than producing a broken file.
//
// It also writes the bundle's SHA-256 where web/llms-full.txt states it
// (see Stated), so the document never names other bytes than the ones
// served.
//
// Usage: go run ./internal/cmd/verifier-bundle [-o tools/dist/verify-record.mjs] [-docs web/llms-full.txt] [repository root]
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Entry is the verifier's entry module, relative to the repository root.
const Entry = "tools/verify-record.mjs"

// Output is where the bundle is written, relative to the repository root.
const Output = "tools/dist/verify-record.mjs"

// Docs is the document that states the bundle's SHA-256.
const Docs = "web/llms-full.txt"

// Stated finds the SHA-256 the document states for the verifier.
var Stated = regexp.MustCompile("(verify-record\\.mjs \\(one file[^`]*its SHA-256 is `)([0-9a-f]{64})(`)")

// restate rewrites the SHA-256 the document at path states for the
// verifier to that of b; the document must state exactly one.
func restate(path string, b []byte) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if n := len(Stated.FindAllIndex(doc, -1)); n != 1 {
		return fmt.Errorf("%s states the verifier's SHA-256 %d times, not once (%s)", path, n, Stated)
	}
	sum := sha256.Sum256(b)
	out := Stated.ReplaceAll(doc, []byte("${1}"+hex.EncodeToString(sum[:])+"${3}"))
	if string(out) == string(doc) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}

func main() {
	out := flag.String("o", Output, "output file")
	docs := flag.String("docs", Docs, "document that states the bundle's SHA-256")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	b, err := Bundle(os.DirFS(root), Entry)
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err == nil && *docs != "" {
		err = restate(*docs, b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "verifier-bundle:", err)
		os.Exit(1)
	}
}

var (
	importRE = regexp.MustCompile(`^import \{([^}]*)\} from "([^"]+)";\s*$`)
	exportRE = regexp.MustCompile(`^export ((?:async )?function\*? |const |let |class )([A-Za-z_$][A-Za-z0-9_$]*)`)
)

// module is one parsed source file.
type module struct {
	path    string
	lines   []string // the body, its import lines removed
	exports []string
	// imports from sibling modules: resolved path and the import clause
	local []localImport
}

type localImport struct {
	path   string
	clause string
}

// Bundle returns the entry module of fsys with the relative modules it
// imports, directly or not, inlined.
func Bundle(fsys fs.FS, entry string) ([]byte, error) {
	node := map[string][]string{} // specifier -> clause items, in first-seen order
	var nodeOrder []string
	mods := map[string]*module{}
	var order []string // dependencies before dependents
	var visit func(p string, stack []string) error
	visit = func(p string, stack []string) error {
		if slices.Contains(stack, p) {
			return fmt.Errorf("import cycle: %s", strings.Join(append(stack, p), " -> "))
		}
		if _, done := mods[p]; done {
			return nil
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		m := &module{path: p}
		for i, line := range strings.Split(strings.TrimSuffix(string(src), "\n"), "\n") {
			if strings.HasPrefix(line, "import") {
				g := importRE.FindStringSubmatch(line)
				if g == nil {
					return fmt.Errorf("%s:%d: only `import { names } from \"specifier\";` on one line is understood", p, i+1)
				}
				clause, spec := strings.TrimSpace(g[1]), g[2]
				switch {
				case strings.HasPrefix(spec, "node:"):
					if _, ok := node[spec]; !ok {
						nodeOrder = append(nodeOrder, spec)
					}
					for _, item := range strings.Split(clause, ",") {
						item = strings.Join(strings.Fields(item), " ")
						if item != "" && !slices.Contains(node[spec], item) {
							node[spec] = append(node[spec], item)
						}
					}
				case strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../"):
					if strings.Contains(clause, " as ") {
						return fmt.Errorf("%s:%d: renamed imports of a sibling module are not understood", p, i+1)
					}
					m.local = append(m.local, localImport{path: path.Join(path.Dir(p), spec), clause: clause})
				default:
					return fmt.Errorf("%s:%d: %q is neither a node: module nor a relative one: the verifier uses Node's standard library only", p, i+1, spec)
				}
				continue
			}
			if p != entry && strings.HasPrefix(line, "export") {
				g := exportRE.FindStringSubmatch(line)
				if g == nil {
					return fmt.Errorf("%s:%d: only `export` before a function, const, let or class declaration is understood", p, i+1)
				}
				m.exports = append(m.exports, g[2])
				line = strings.TrimPrefix(line, "export ")
			}
			m.lines = append(m.lines, line)
		}
		mods[p] = m
		for _, l := range m.local {
			if err := visit(l.path, append(stack, p)); err != nil {
				return err
			}
		}
		order = append(order, p)
		return nil
	}
	if err := visit(entry, nil); err != nil {
		return nil, err
	}

	e := mods[entry]
	var b strings.Builder
	body := e.lines
	if len(body) > 0 && strings.HasPrefix(body[0], "#!") {
		b.WriteString(body[0] + "\n")
		body = body[1:]
	}
	// The entry's leading comment stays on top.
	n := 0
	for n < len(body) && strings.HasPrefix(body[n], "//") {
		b.WriteString(body[n] + "\n")
		n++
	}
	body = body[n:]
	fmt.Fprintf(&b, "//\n// Generated by `make generate` (internal/cmd/verifier-bundle) from %s: edit those files, not this one.\n", strings.Join(order, ", "))
	for _, spec := range nodeOrder {
		fmt.Fprintf(&b, "import { %s } from %q;\n", strings.Join(node[spec], ", "), spec)
	}
	for _, p := range order {
		if p == entry {
			continue
		}
		m := mods[p]
		if len(m.exports) == 0 {
			return nil, fmt.Errorf("%s exports nothing", p)
		}
		fmt.Fprintf(&b, "\n// ---- %s\nconst %s = (() => {\n", p, moduleVar(p))
		for _, l := range m.local {
			fmt.Fprintf(&b, "const { %s } = %s;\n", l.clause, moduleVar(l.path))
		}
		for _, line := range m.lines {
			b.WriteString(line + "\n")
		}
		fmt.Fprintf(&b, "return { %s };\n})();\n", strings.Join(m.exports, ", "))
	}
	fmt.Fprintf(&b, "\n// ---- %s\n", entry)
	for _, l := range e.local {
		fmt.Fprintf(&b, "const { %s } = %s;\n", l.clause, moduleVar(l.path))
	}
	for _, line := range body {
		b.WriteString(line + "\n")
	}
	return []byte(b.String()), nil
}

// moduleVar is the name of the constant holding a module's exports.
func moduleVar(p string) string {
	return "__" + regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(strings.TrimSuffix(p, ".mjs"), "_")
}

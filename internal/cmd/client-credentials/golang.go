package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"slices"
	"strings"
)

// methodSet is the methods of ClientWithResponsesInterface and the imports
// of the generated client their signatures use, beyond context.
type methodSet struct {
	methods []method
	// streams are the ClientInterface methods of the operations that
	// answer with a typed event stream: the raw response, unread.
	streams []method
	imports []string // import specs, as written in the client
}

// method is one method of the generated ClientWithResponsesInterface and
// the operation it calls.
type method struct {
	name    string
	params  string // the parameter list, names and types, as declared
	args    []string
	results string
	op      Operation
}

// clientMethods reads ClientWithResponsesInterface from the generated
// client's source and pairs each method with its operation: the method is
// the operationId, capitalized, then WithResponse or WithBodyWithResponse.
func clientMethods(ops []Operation, src []byte) (methodSet, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, GoClient, src, 0)
	if err != nil {
		return methodSet{}, err
	}
	byName := map[string]Operation{}
	for _, o := range ops {
		byName[strings.ToUpper(o.ID[:1])+o.ID[1:]] = o
	}
	text := func(n ast.Node) string {
		var b bytes.Buffer
		_ = printer.Fprint(&b, fset, n)
		return b.String()
	}
	var out, streams []method
	used := map[string]bool{}
	types := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		types[ts.Name.Name] = true
		raw := ts.Name.Name == "ClientInterface"
		if !raw && ts.Name.Name != "ClientWithResponsesInterface" {
			return false
		}
		for _, field := range ts.Type.(*ast.InterfaceType).Methods.List {
			fn, ok := field.Type.(*ast.FuncType)
			if !ok || len(field.Names) != 1 {
				continue
			}
			m := method{name: field.Names[0].Name}
			base := strings.TrimSuffix(strings.TrimSuffix(m.name, "WithResponse"), "WithBody")
			op, found := byName[base]
			if raw && (!found || op.Stream == "" || base != m.name) {
				continue
			}
			if !found {
				err = fmt.Errorf("ClientWithResponsesInterface.%s names no operation of %s", m.name, Contract)
				return false
			}
			m.op = op
			var params []string
			for _, p := range fn.Params.List {
				for _, name := range p.Names {
					params = append(params, name.Name+" "+text(p.Type))
					if _, variadic := p.Type.(*ast.Ellipsis); variadic {
						m.args = append(m.args, "withCredential(c.editor, "+name.Name+")...")
					} else {
						m.args = append(m.args, name.Name)
					}
				}
			}
			m.params = strings.Join(params, ", ")
			var results []string
			for _, r := range fn.Results.List {
				results = append(results, text(r.Type))
			}
			m.results = "(" + strings.Join(results, ", ") + ")"
			ast.Inspect(fn, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok {
						used[id.Name] = true
					}
				}
				return true
			})
			if !strings.HasSuffix(m.params, "reqEditors ...RequestEditorFn") {
				err = fmt.Errorf("%s.%s does not end with reqEditors ...RequestEditorFn", ts.Name.Name, m.name)
				return false
			}
			if raw {
				streams = append(streams, m)
			} else {
				out = append(out, m)
			}
		}
		return false
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%s has no ClientWithResponsesInterface", GoClient)
	}
	for _, m := range streams {
		if err == nil && !types[m.op.Stream] {
			err = fmt.Errorf("%s streams %s, a type %s does not declare (is the schema pruned?)", m.op.ID, m.op.Stream, GoClient)
		}
	}
	set := methodSet{methods: out, streams: streams}
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if used[name] && !slices.Contains(baseImports, path) {
			set.imports = append(set.imports, text(imp))
		}
	}
	return set, err
}

// Go is the layer next to the oapi-codegen client: the operations'
// credentials, a RequestEditorFn per kind, and a client per kind with the
// methods of the operations that kind opens.
func Go(ops []Operation, clientSrc []byte) ([]byte, error) {
	set, err := clientMethods(ops, clientSrc)
	if err != nil {
		return nil, err
	}
	ms := set.methods
	imports := slices.Clone(baseImports)
	if len(set.streams) > 0 {
		imports = append(imports, streamImports...)
	}
	slices.Sort(imports)
	var specs []string
	for _, imp := range imports {
		specs = append(specs, quote(imp))
	}
	specs = append(specs, set.imports...)
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p(`// %s

package oapiclient

import (
%s)

// The generated client leaves the Authorization header to the caller. This
// file types it: a credential is a value of its kind's type, its Editor
// sets the header, and a client made for one credential (NewParticipantClient
// and its siblings) has only the methods of the operations that credential
// opens, so a call with the wrong kind of credential does not compile.

// CredentialKind is a kind of credential an operation accepts.
type CredentialKind string

// The kinds of credential.
const (
`, generatedBy, extraImports(specs))
	for _, k := range Kinds {
		p("\t// Credential%s is %s.\n\tCredential%s CredentialKind = %s\n", title(k.Name), k.What, title(k.Name), quote(k.Name))
	}
	p(`)

// CredentialRoute is an operation's route, the credential kinds it accepts
// (any one), and for an operator route the scope the key needs.
type CredentialRoute struct {
	Method      string
	Path        string
	Credentials []CredentialKind
	Scope       string
}

// Credentials maps every operationId of the contract (openapi.json, a
// superset of the operations this client has) to its CredentialRoute.
var Credentials = map[string]CredentialRoute{
`)
	for _, o := range ops {
		ks := make([]string, len(o.Kinds))
		for i, k := range o.Kinds {
			ks[i] = "Credential" + title(k)
		}
		p("\t%s: {%s, %s, []CredentialKind{%s}, %s},\n", quote(o.ID), quote(strings.ToUpper(o.Method)), quote(o.Path), strings.Join(ks, ", "), quote(o.Scope))
	}
	p(`}

// authorization is the editor that sets the Authorization header to
// prefix+value, refusing a value that is not one word or lacks token.
func authorization(kind, prefix, token, value string) RequestEditorFn {
	return func(_ context.Context, r *http.Request) error {
		if value == "" || strings.ContainsAny(value, " \t\r\n") {
			return fmt.Errorf("oapiclient: a %%s credential is one non-empty word", kind)
		}
		if !strings.HasPrefix(value, token) {
			return fmt.Errorf("oapiclient: a %%s credential starts with %%s", kind, token)
		}
		r.Header.Set("Authorization", prefix+value)
		return nil
	}
}

// withCredential runs the caller's editors, then the credential's, which
// therefore wins; the caller's slice is left as it was.
func withCredential(credential RequestEditorFn, editors []RequestEditorFn) []RequestEditorFn {
	out := make([]RequestEditorFn, 0, len(editors)+1)
	out = append(out, editors...)
	if credential != nil {
		out = append(out, credential)
	}
	return out
}
`)
	for _, k := range Kinds {
		client := title(k.Name) + "Client"
		var kindMs []method
		for _, m := range ms {
			if slices.Contains(m.op.Kinds, k.Name) {
				kindMs = append(kindMs, m)
			}
		}
		if k.Scheme == "" {
			client = "PublicClient"
			p(`
// PublicClient calls the operations that accept %s: no credential.
type PublicClient struct {
	c      *ClientWithResponses
	editor RequestEditorFn
}

// NewPublicClient calls c's public operations, with no credential.
func NewPublicClient(c *ClientWithResponses) *PublicClient { return &PublicClient{c: c} }
`, k.Name)
		} else {
			p(`
// %[1]s is %[2]s, sent as `+"`Authorization: %[3]s<credential>`"+`.
type %[1]s string

// Editor sets the Authorization header to the %[4]s credential.
func (v %[1]s) Editor() RequestEditorFn {
	return authorization(%[5]s, %[6]s, %[7]s, string(v))
}
`, k.Go, k.What, k.Prefix, k.Name, quote(k.Name), quote(k.Prefix), quote(k.Token))
			if len(kindMs) == 0 {
				continue
			}
			p(`
// %[1]s calls only the operations a %[3]s credential opens, each with it.
type %[1]s struct {
	c      *ClientWithResponses
	editor RequestEditorFn
}

// New%[1]s calls c's operations that accept credential, with it.
func New%[1]s(c *ClientWithResponses, credential %[2]s) *%[1]s {
	return &%[1]s{c: c, editor: credential.Editor()}
}
`, client, k.Go, k.Name)
		}
		for _, m := range kindMs {
			p("\n// %s calls %s %s.\nfunc (c *%s) %s(%s) %s {\n\treturn c.c.%s(%s)\n}\n",
				m.name, strings.ToUpper(m.op.Method), m.op.Path, client, m.name, m.params, m.results, m.name, strings.Join(m.args, ", "))
		}
		for _, m := range set.streams {
			if !slices.Contains(m.op.Kinds, k.Name) {
				continue
			}
			p(`
// %[1]sMessages calls %[2]s %[3]s
// and reads its answer, a server-sent event stream, as %[4]s values; the
// caller closes the reader.
func (c *%[5]s) %[1]sMessages(%[6]s) (*%[4]sReader, error) {
	resp, err := c.c.%[1]s(%[7]s)
	if err != nil {
		return nil, err
	}
	return New%[4]sReader(resp)
}
`, m.name, strings.ToUpper(m.op.Method), m.op.Path, m.op.Stream, client, m.params, strings.Join(m.args, ", "))
		}
	}
	var done []string
	for _, m := range set.streams {
		if slices.Contains(done, m.op.Stream) {
			continue
		}
		done = append(done, m.op.Stream)
		p(streamReader, m.op.Stream)
	}
	return format.Source([]byte(b.String()))
}

var (
	baseImports   = []string{"context", "fmt", "net/http", "strings"}
	streamImports = []string{"bufio", "encoding/json", "io"}
)

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

func extraImports(specs []string) string {
	var b strings.Builder
	for _, s := range specs {
		b.WriteString("\t" + s + "\n")
	}
	return b.String()
}

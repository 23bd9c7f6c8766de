package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"

	consensus "github.com/consensus-md/consensus"
)

// The agent's kit: the standard-library record verifier as one file and
// the conformance vectors it is tested with, published as the embedded
// bytes the conformance tests run, never rewritten for the origin (the
// vectors are signed; the verifier names no origin).

// VerifierPath is where the verifier is published.
const VerifierPath = "/tools/verify-record.mjs"

// ConformancePath is the prefix of the conformance vectors; the path
// itself serves their index.
const ConformancePath = "/conformance/"

// verifierSHA256 is the SHA-256 of the published verifier, lowercase hex.
func verifierSHA256() string {
	sum := sha256.Sum256(consensus.VerifyRecord)
	return hex.EncodeToString(sum[:])
}

// KitIndex is the document at /conformance/: every file with its SHA-256,
// and the verifier's.
type KitIndex struct {
	Verifier KitFile   `json:"verifier"`
	Manifest string    `json:"manifest"`
	Run      string    `json:"run"`
	Files    []KitFile `json:"files"`
}

// KitFile is one published file of the kit.
type KitFile struct {
	Name      string `json:"name"`
	Href      string `json:"href"`
	MediaType string `json:"mediaType"`
	Bytes     int    `json:"bytes"`
	SHA256    string `json:"sha256"`
}

type kitDocs struct {
	verifier document
	index    document
	files    map[string]document
}

// kitDocument is an immutable public file: cacheable, with a strong ETag
// from its SHA-256.
func kitDocument(b []byte, contentType string) (document, string) {
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	return document{body: b, contentType: contentType, extra: http.Header{
		"Etag":                   {`"sha256-` + h + `"`},
		"X-Consensus-Sha256":     {h},
		"X-Content-Type-Options": {"nosniff"},
	}}, h
}

// serveTagged serves d, or 304 Not Modified to a matching If-None-Match.
func (d document) serveTagged(w http.ResponseWriter, r *http.Request) {
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, d.extra.Get("ETag")) {
		h := w.Header()
		for k, v := range d.extra {
			h[k] = v
		}
		w.WriteHeader(http.StatusNotModified)
		return
	}
	d.serve(w, r)
}

// kitMediaType is the media type of a conformance file by its extension.
func kitMediaType(name string) string {
	switch path.Ext(name) {
	case ".json":
		return "application/json; charset=utf-8"
	case ".md":
		return "text/markdown; charset=utf-8"
	}
	panic("httpapi: conformance file " + name + " has no media type")
}

// kitDocuments renders the verifier, the conformance files and their
// index. The embedded files are fixed at build time, so a failure here is
// a build bug.
func (s *Server) kitDocuments() kitDocs {
	const jsType = "text/javascript; charset=utf-8"
	v, vsum := kitDocument(consensus.VerifyRecord, jsType)
	k := kitDocs{verifier: v, files: map[string]document{}}
	idx := KitIndex{
		Verifier: KitFile{Name: path.Base(VerifierPath), Href: s.origin + VerifierPath, MediaType: jsType, Bytes: len(consensus.VerifyRecord), SHA256: vsum},
		Manifest: s.origin + ConformancePath + "manifest.json",
		Run: "Save every file below into one directory DIR and the verifier beside it, check each SHA-256, then run " +
			"node verify-record.mjs --conformance DIR (Node 18 or later, standard library only): it prints one line per vector " +
			"and exits 0 when every vector fails exactly the checks manifest.json expects.",
		Files: []KitFile{},
	}
	entries, err := fs.ReadDir(consensus.Conformance, "conformance/records")
	if err != nil {
		panic("httpapi: embedded conformance/records is missing")
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := fs.ReadFile(consensus.Conformance, "conformance/records/"+e.Name())
		if err != nil {
			panic("httpapi: embedded conformance/records/" + e.Name() + ": " + err.Error())
		}
		ct := kitMediaType(e.Name())
		d, sum := kitDocument(b, ct)
		k.files[e.Name()] = d
		idx.Files = append(idx.Files, KitFile{Name: e.Name(), Href: s.origin + ConformancePath + e.Name(), MediaType: ct, Bytes: len(b), SHA256: sum})
	}
	sort.Slice(idx.Files, func(i, j int) bool { return idx.Files[i].Name < idx.Files[j].Name })
	k.index, _ = kitDocument(mustJSON(idx), "application/json; charset=utf-8")
	if strings.Contains(string(consensus.VerifyRecord), consensus.DocumentOrigin) {
		panic("httpapi: the verifier names the document origin, which a deployment does not rewrite in it")
	}
	return k
}

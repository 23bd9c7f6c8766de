package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"html"
	"io/fs"
	"net/http"
	"net/mail"
	"path"

	"github.com/go-chi/chi/v5"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/room"
)

// The pages for people: the home page, the invitation page and
// the script and style files they load. Nothing is inline, so the policy
// allows scripts and styles from this origin only, and the pages may
// connect to this origin only. Trusted Types are required with no policy,
// so nothing on a page can turn a string into HTML: participant text can
// only ever be text.
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"

// assetTypes are the media types of the files under web/assets/.
var assetTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".ico": "image/x-icon",
}

// pageHeaders are what every page and asset carries besides the global
// nosniff and no-referrer headers.
func pageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", pagePolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()")
}

type webPages struct {
	index, invite, console document
	assets                 map[string]document
}

// webPages loads the embedded pages once. The home page is the same for
// everyone; the invitation page is private to whoever holds the link, so it
// is never stored by a cache.
func (s *Server) webPages() webPages {
	page := func(name, cache string) document {
		h := http.Header{}
		h.Set("Cache-Control", cache)
		pageHeaders(h)
		return document{body: s.webDocument(name), contentType: "text/html; charset=utf-8", extra: h}
	}
	p := webPages{index: page("index.html", publicCache), invite: page("invite.html", "no-store"), console: page("console.html", "no-store"), assets: map[string]document{}}
	p.index.body = bytes.Replace(p.index.body, []byte(senderMarker), []byte(senderSentence(s.mailFrom)), 1)
	entries, err := fs.ReadDir(consensus.Web, "web/assets")
	if err != nil {
		panic("httpapi: embedded web/assets is missing")
	}
	for _, e := range entries {
		ct, ok := assetTypes[path.Ext(e.Name())]
		if !ok {
			continue
		}
		b, err := fs.ReadFile(consensus.Web, "web/assets/"+e.Name())
		if err != nil {
			panic("httpapi: embedded web/assets/" + e.Name() + " is unreadable")
		}
		sum := sha256.Sum256(b)
		// no-cache: a browser revalidates every use, so a page never runs
		// with a script or style of another version for long.
		h := http.Header{}
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", `"sha256-`+hex.EncodeToString(sum[:16])+`"`)
		pageHeaders(h)
		p.assets[e.Name()] = document{body: b, contentType: ct, extra: h}
	}
	return p
}

// senderMarker is where the home page's footer names the sender of
// invitations.
const senderMarker = "<!--sender-->"

// senderSentence names the address invitations are sent from, from the
// configured From (a display name and address, or an address), escaped;
// "" when none is configured.
func senderSentence(from string) string {
	if from == "" {
		return ""
	}
	addr := from
	if a, err := mail.ParseAddress(from); err == nil {
		addr = a.Address
	}
	return "Invitations from this deployment are sent from <code>" + html.EscapeString(addr) + "</code>. "
}

// webDocument reads web/name, written for https://consensus.md, for this origin.
func (s *Server) webDocument(name string) []byte {
	b, err := fs.ReadFile(consensus.Web, "web/"+name)
	if err != nil {
		panic("httpapi: embedded web/" + name + " is missing")
	}
	return rewriteOrigin(b, s.origin)
}

// handleInvitePage serves the page invite_uri opens. The server reads
// nothing for it: the secret in the fragment never reaches the server; the
// page's script reads it and sends it in an exchange body.
func (s *Server) handleInvitePage(page document) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "invitationId")
		if !isID(id) {
			s.writeProblem(w, r, room.ErrNotFound)
			return
		}
		page.serve(w, r)
	}
}

// consolePages are the console's page names under /console/: one page
// that shows the view its path names.
var consolePages = map[string]bool{"signin": true, "enroll": true, "agreements": true, "new": true, "keys": true, "operators": true, "passkeys": true, "audit": true}

// handleConsolePage serves the console's page for a view it has; any
// other path is not found.
func (s *Server) handleConsolePage(page document) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !consolePages[chi.URLParam(r, "page")] {
			s.writeProblem(w, r, room.ErrNotFound)
			return
		}
		page.serve(w, r)
	}
}

func (s *Server) handleAsset(assets map[string]document) http.HandlerFunc {
	return s.handleAssetNamed(assets, "")
}

// handleAssetNamed serves the asset name, or with "" the one the path's
// {name} names.
func (s *Server) handleAssetNamed(assets map[string]document, name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n := name
		if n == "" {
			n = chi.URLParam(r, "name")
		}
		doc, ok := assets[n]
		if !ok {
			s.writeProblem(w, r, room.ErrNotFound)
			return
		}
		if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, doc.extra.Get("ETag")) {
			h := w.Header()
			for k, v := range doc.extra {
				h[k] = v
			}
			w.WriteHeader(http.StatusNotModified)
			return
		}
		doc.serve(w, r)
	}
}

// rewriteOrigin replaces the origin the embedded documents are written with
// by the configured one.
func rewriteOrigin(b []byte, origin string) []byte {
	return bytes.ReplaceAll(b, []byte(consensus.DocumentOrigin), []byte(origin))
}

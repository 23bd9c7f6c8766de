package httpapi

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/venue"
)

// publicCache marks a public document: no credential, same for everyone.
const publicCache = "public, max-age=300"

// apiCatalogType is the media type RFC 9727 gives the API catalog.
const apiCatalogType = `application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"`

// document is a public document rendered once for the configured origin.
type document struct {
	body        []byte
	contentType string
	extra       http.Header
}

func (d document) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	for k, v := range d.extra {
		h[k] = v
	}
	h.Set("Content-Type", d.contentType)
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", publicCache)
	}
	h.Set("Content-Length", strconv.Itoa(len(d.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(d.body)
	}
}

type discoveryDocs struct {
	capabilities, apiCatalog, openapi, openapiAgent, llms, llmsFull document
	schemas                                                         map[string]document
}

// discoveryDocuments renders every public document for s.origin. The
// embedded files are fixed at build time, so a failure here is a build bug.
func (s *Server) discoveryDocuments() discoveryDocs {
	rewrite := func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte(consensus.DocumentOrigin), []byte(s.origin))
	}
	web := func(name string) []byte {
		b, err := fs.ReadFile(consensus.Web, "web/"+name)
		if err != nil {
			panic("httpapi: embedded web/" + name + " is missing")
		}
		return rewrite(b)
	}
	d := discoveryDocs{
		capabilities: document{body: mustJSON(s.withLog(s.withReply(s.capabilities()))), contentType: "application/json; charset=utf-8"},
		apiCatalog: document{body: mustJSON(s.apiCatalog()), contentType: apiCatalogType,
			extra: http.Header{"Link": {"<" + s.origin + `/.well-known/api-catalog>; rel="api-catalog"`}}},
		openapi:      document{body: rewrite(consensus.OpenAPI), contentType: "application/json; charset=utf-8"},
		openapiAgent: document{body: rewrite(consensus.OpenAPIAgent), contentType: "application/json; charset=utf-8"},
		llms:         document{body: web("llms.txt"), contentType: "text/plain; charset=utf-8"},
		llmsFull:     document{body: s.llmsFull(web("llms-full.txt")), contentType: "text/plain; charset=utf-8"},
		schemas:      map[string]document{},
	}
	files, _ := fs.Glob(consensus.Schemas, "schemas/*/v*.json")
	for _, f := range files {
		b, err := fs.ReadFile(consensus.Schemas, f)
		if err == nil {
			// keyed "name/vN", as the URL names it
			d.schemas[strings.TrimSuffix(strings.TrimPrefix(f, "schemas/"), ".json")] = document{body: rewrite(b), contentType: "application/schema+json; charset=utf-8"}
		}
	}
	return d
}

var schemaNameRE = regexp.MustCompile(`^[a-z][a-z-]*/v[1-9][0-9]*$`)

func (s *Server) handleSchema(schemas map[string]document) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "name") + "/" + chi.URLParam(r, "version")
		doc, ok := schemas[name]
		if !schemaNameRE.MatchString(name) || !ok {
			s.writeProblem(w, r, room.ErrNotFound)
			return
		}
		doc.serve(w, r)
	}
}

// llmsFull is llms-full.txt, its origin already this deployment's, with
// its generated parts generated for this deployment (docs_generated.go).
func (s *Server) llmsFull(doc []byte) []byte {
	out, err := applyParts(doc, docParts(s.origin, participantRoutes(s.routeShapes()), s.withReply(s.capabilities())))
	if err != nil {
		panic(err.Error())
	}
	return out
}

// Capabilities is the /.well-known/consensus-agent document.
type Capabilities struct {
	Protocol    CapabilityProtocol  `json:"protocol"`
	Service     string              `json:"service"`
	Origin      string              `json:"origin"`
	Endpoints   map[string]Endpoint `json:"endpoints"`
	Credentials []CredentialScheme  `json:"credentials"`
	Limits      Limits              `json:"limits"`
	Schemas     map[string]string   `json:"schemas"`
	Documents   map[string]string   `json:"documents"`
	Offered     Offered             `json:"offered"`
	NotOffered  []string            `json:"notOffered"`
}

// Offered lists what this deployment offers beyond the V1 agent guide.
type Offered struct {
	MCP        MCPCapability        `json:"mcp"`
	Revisions  RevisionsCapability  `json:"revisions"`
	Signatures SignaturesCapability `json:"signatures"`
	Live       LiveCapability       `json:"live"`
	// Reply is present when the deployment reads replies (discovery_reply.go).
	Reply *ReplyCapability `json:"reply,omitempty"`
	// Log is present when the deployment keeps a transparency log
	// (discovery_log.go).
	Log *LogCapability `json:"log,omitempty"`
}

// SignaturesCapability describes participant-held keys and the record.
type SignaturesCapability struct {
	Algorithm       string `json:"algorithm"`
	BindingSchema   string `json:"bindingSchema"`
	SignatureHeader string `json:"signatureHeader"`
	CommandSchema   string `json:"commandSchema"`
	Record          string `json:"record"`
	Keys            string `json:"keys"`
	Verifier        string `json:"verifier"`
	// VerifierURL is the standard-library verifier as one file, and
	// VerifierSHA256 the SHA-256 of its bytes; Conformance indexes the
	// vectors it is tested with.
	VerifierURL    string `json:"verifierUrl"`
	VerifierSHA256 string `json:"verifierSha256"`
	Conformance    string `json:"conformance"`
}

// MCPCapability describes the MCP facade and what it is not.
type MCPCapability struct {
	Endpoint   string   `json:"endpoint"`
	Transport  string   `json:"transport"`
	Stateless  bool     `json:"stateless"`
	Credential string   `json:"credential"`
	Tools      []string `json:"tools"`
	Rules      string   `json:"rules"`
	NotOffered []string `json:"notOffered"`
}

// CapabilityProtocol names the protocol and its version.
type CapabilityProtocol struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// FirstAgreementRevision is the revision number every agreement starts
	// at; Revisions is the same number under its older name, kept for the
	// clients that read it.
	FirstAgreementRevision int    `json:"firstAgreementRevision"`
	Revisions              []int  `json:"revisions"`
	Transport              string `json:"transport"`
}

// Endpoint is one agent route as a URL template.
type Endpoint struct {
	// Method is the route's first method; Methods lists them all.
	Method     string   `json:"method"`
	Methods    []string `json:"methods"`
	Href       string   `json:"href"`
	Credential string   `json:"credential"`
}

// CredentialScheme says where a credential comes from and which routes take it.
type CredentialScheme struct {
	Scheme     string   `json:"scheme"`
	Source     string   `json:"source"`
	AcceptedBy []string `json:"acceptedBy"`
	Lifetime   string   `json:"lifetime"`
}

// Limits are the limits the service enforces, from the same constants the
// handlers use.
type Limits struct {
	ExchangeBodyBytes int `json:"exchangeBodyBytes"`
	ClaimBodyBytes    int `json:"claimBodyBytes"`
	EventsBodyBytes   int `json:"eventsBodyBytes"`
	// ReadBodyBytes is the most each route reads as sent, before parsing.
	ReadBodyBytes                   ReadLimits `json:"readBodyBytes"`
	EventBodyCharacters             int        `json:"eventBodyCharacters"`
	EventsPerParticipantPerRevision int        `json:"eventsPerParticipantPerRevision"`
	SessionLifetimeSeconds          int        `json:"sessionLifetimeSeconds"`
	RateLimitPerMinute              int        `json:"rateLimitPerMinute"`
	IdempotencyKeyPattern           string     `json:"idempotencyKeyPattern"`
}

// ReadLimits are, per agent route with a body, the most it reads as sent:
// at least the longest encoding of its longest legal body.
type ReadLimits struct {
	Exchange int `json:"exchange"`
	Claim    int `json:"claim"`
	Events   int `json:"events"`
}

func (s *Server) capabilities() Capabilities {
	u := agentroute.For(s.origin, "{"+agentroute.IDParam+"}")
	uses := participantRoutes(s.routeShapes())
	base := s.origin + agentroute.Prefix + "{" + agentroute.IDParam + "}"
	endpoints := map[string]Endpoint{}
	for _, use := range uses {
		if use.Name != "mcp" {
			endpoints[use.Name] = Endpoint{Method: use.Methods[0], Methods: use.Methods, Href: base + use.Path, Credential: use.Scheme}
		}
	}
	return Capabilities{
		Protocol:  CapabilityProtocol{Name: "consensus-invitation-rest", Version: "1", FirstAgreementRevision: 1, Revisions: []int{1}, Transport: "https-rest-json"},
		Service:   "consensus",
		Origin:    s.origin,
		Endpoints: endpoints,
		Credentials: []CredentialScheme{
			{venue.SchemeInvite, "the secret fragment of invite_uri in the invitation email; also accepted as the JSON secret member of the exchange body", acceptedBy(uses, venue.SchemeInvite), "until the agreement deadline"},
			{venue.SchemeSession, "sessionToken from exchange", acceptedBy(uses, venue.SchemeSession), "at most 20 minutes, never past the deadline"},
			{venue.SchemeParticipant, "participantToken from claim", acceptedBy(uses, venue.SchemeParticipant), "durable; revocable by the operator"},
		},
		Limits: Limits{
			ExchangeBodyBytes: int(limitExchange.Bytes), ClaimBodyBytes: int(limitClaim.Bytes), EventsBodyBytes: int(limitEvents.Bytes),
			ReadBodyBytes:       ReadLimits{Exchange: int(limitExchange.Wire), Claim: int(limitClaim.Wire), Events: int(limitEvents.Wire)},
			EventBodyCharacters: room.MaxBody, EventsPerParticipantPerRevision: room.MaxEventsPerParticipant,
			SessionLifetimeSeconds: int(venue.SessionLifetime.Seconds()), RateLimitPerMinute: max(0, s.limiter.perMinute),
			IdempotencyKeyPattern: room.IdempotencyKeyPattern,
		},
		Schemas: map[string]string{
			"invitationEmail":      s.origin + "/schemas/invitation-email/v1",
			"agreement":            s.origin + "/schemas/agreement/v1",
			"roomCommand":          s.origin + "/schemas/room-command/v1",
			"roomCommandV2":        s.origin + "/schemas/room-command/v2",
			"participantBinding":   s.origin + "/schemas/participant-binding/v1",
			"participantBindingV2": s.origin + "/schemas/participant-binding/v2",
			"consensusRecord":      s.origin + "/schemas/consensus-record/v1",
			"logLeaf":              s.origin + "/schemas/consensus-log-leaf/v1",
			"logProof":             s.origin + "/schemas/consensus-log-proof/v1",
		},
		Documents: map[string]string{
			"openapi":      s.origin + "/openapi.json",
			"openapiAgent": s.origin + "/openapi-agent.json",
			"apiCatalog":   s.origin + "/.well-known/api-catalog",
			"health":       s.origin + "/api/health",
			"llms":         s.origin + "/llms.txt",
			"llmsFull":     s.origin + "/llms-full.txt",
			"signingKeys":  s.origin + "/.well-known/consensus-keys",
		},
		Offered: Offered{MCP: MCPCapability{
			Endpoint: s.origin + "/mcp", Transport: "streamable-http", Stateless: true, Credential: venue.SchemeParticipant,
			Tools: []string{"read_room", "wait_for_change", "command_to_sign", "post_advisory", "decide", "fetch_artifact", "fetch_record", "fetch_record_proof"},
			Rules: "Each tool runs the use case of the matching REST route under the same rules and order of checks; it adds no power the REST API lacks. " +
				"decide requires the current revision number and digest and confirm: true. wait_for_change is held like Prefer: wait (at most 60 seconds, counted among the waiting requests of offered.live). " +
				"A participant that bound a key passes signature to post_advisory and decide, over the bytes command_to_sign returns; unsigned, it is refused with signature-required as on REST. " +
				"fetch_record returns the record's exact bytes as an embedded application/json resource; fetch_record_proof its transparency log proof (consensus-log-proof/v1), refused like GET .../record/proof. Participant-written text is returned marked untrusted.",
			NotOffered: []string{"exchange and claim (REST only: MCP starts with a participant token)", "sessions, server-initiated requests, notifications and GET event streams",
				"operator tools", "resources to list or read, and prompts"},
		},
			Revisions: revisionsCapability(),
			Live:      s.liveCapability(),
			Signatures: SignaturesCapability{
				Algorithm: "Ed25519", BindingSchema: s.origin + "/schemas/participant-binding/v2", SignatureHeader: "Consensus-Signature",
				CommandSchema: s.origin + "/schemas/room-command/v2",
				Record:        u.Record, Keys: s.origin + "/.well-known/consensus-keys",
				Verifier: "node verify-record.mjs RECORD.json --artifact CONSENSUS.md --keys JWKS, with the file from verifierUrl (Node standard library only; check its SHA-256 against verifierSha256), " +
					"or consensus verify record with the same arguments; by hand: see llms-full.txt",
				VerifierURL: s.origin + VerifierPath, VerifierSHA256: verifierSHA256(), Conformance: s.origin + ConformancePath,
			},
		},
		NotOffered: []string{"a2a", "agent-initiation", "email-reply-participation",
			"self-service-token-revocation", "runtime-callback", "independent-timestamps", "execution"},
	}
}

type link struct {
	Href  string `json:"href"`
	Type  string `json:"type,omitempty"`
	Title string `json:"title,omitempty"`
}

// apiCatalog is the RFC 9727 linkset: one entry anchored at the agent API.
func (s *Server) apiCatalog() map[string]any {
	return map[string]any{"linkset": []map[string]any{{
		"anchor": s.origin + "/api/v1/agent",
		"service-desc": []link{
			{Href: s.origin + "/openapi.json", Type: "application/vnd.oai.openapi+json;version=3.1", Title: "OpenAPI 3.1 description"},
			{Href: s.origin + "/openapi-agent.json", Type: "application/vnd.oai.openapi+json;version=3.1", Title: "OpenAPI 3.1 description of the invited participant's routes only"},
		},
		"service-doc": []link{
			{Href: s.origin + "/llms-full.txt", Type: "text/plain", Title: "Complete agent reference"},
			{Href: s.origin + "/llms.txt", Type: "text/plain", Title: "Concise machine index"},
		},
		"status":      []link{{Href: s.origin + "/api/health", Type: "application/json", Title: "Health"}},
		"describedby": []link{{Href: s.origin + "/.well-known/consensus-agent", Type: "application/json", Title: "Capabilities for invited agents"}},
	}}}
}

func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		panic("httpapi: encode discovery document: " + err.Error())
	}
	return buf.Bytes()
}

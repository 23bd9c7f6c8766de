// Package consensus embeds the public documents that the service publishes
// and the tools validate against (the JSON Schemas under schemas/), and the
// database migrations.
//
// The embed directive cannot reach parent directories, so this one root-level file holds
// the embedded trees for every package that needs them.
package consensus

import "embed"

// Schemas holds the JSON Schema 2020-12 documents, one per public object, at
// schemas/<name>/v1.json. Their $id uses the origin https://consensus.md; a
// deployment at another origin rewrites it when serving them.
//
//go:embed schemas
var Schemas embed.FS

// Migrations holds the numbered SQL migrations under db/migrations, applied
// by consensusd at start.
//
//go:embed db/migrations/*.sql
var Migrations embed.FS

// OpenAPI is openapi.json, the published contract, generated from api/ by
// `make generate`. It is written with the origin https://consensus.md, which
// the server replaces with the configured public origin when serving it.
//
//go:embed openapi.json
var OpenAPI []byte

// OpenAPIAgent is openapi-agent.json, the part of the contract an invited
// participant calls, generated from api/ with openapi.json. Written with the
// same origin, replaced the same way.
//
//go:embed openapi-agent.json
var OpenAPIAgent []byte

// Web holds the static documents under web/: llms.txt, llms-full.txt and the
// invitation page. They too are written with the origin https://consensus.md.
//
//go:embed web
var Web embed.FS

// VerifyRecord is tools/dist/verify-record.mjs, the standard-library record
// verifier bundled into one file by `make generate`: the bytes the service
// publishes at /tools/verify-record.mjs and the conformance run executes.
//
//go:embed tools/dist/verify-record.mjs
var VerifyRecord []byte

// Conformance holds the record conformance vectors under
// conformance/records, published under /conformance/.
//
//go:embed conformance/records
var Conformance embed.FS

// Package fwtest holds what the agent-framework tests share: an invited
// participant's credentials read from a running consensusd's Maildir, the
// pinned Node tools under tools/, and the test that drives a real server
// with the client agent developers generate for TypeScript
// (openapi-typescript with openapi-fetch) from /openapi-agent.json. The MCP
// facade's test lives in internal/mcpfacade.
//
// The Go client oapi-codegen generates, and the tests that use it directly
// and through Stoplight Prism's validating proxy, are the module under
// goclient, so that the service's go.mod never requires oapi-codegen's
// runtime library (`make test-client` runs them). The TypeScript client is
// generated at test time under tools/ and never committed; the credential
// layer next to it, tools/fw/credentials.gen.mts, is written by
// `make generate` (internal/cmd/client-credentials) and committed, and the
// test type-checks an example that must compile and one that must not.
package fwtest

// Package fwtest holds what the agent-framework tests share (R-FW): an
// invited participant's credentials read from a running consensusd's
// Maildir, and the tests that drive a real server with the clients agent
// developers generate from /openapi-agent.json (oapi-codegen for Go,
// openapi-typescript with openapi-fetch for TypeScript) and through
// Stoplight Prism's validating proxy. The MCP facade's test lives with it
// in internal/mcpfacade.
//
// The Go client under oapiclient is generated and committed; a test here
// regenerates it and fails when it is stale. The TypeScript client is
// generated at test time under tools/ and never committed.
package fwtest

// Package e2e drives the real consensusd over loopback HTTP against a real
// PostgreSQL, as an invited agent and an operator would: every status and
// header of the agent API, the concurrency rules, and the README walkthrough.
package e2e

// Package room holds the domain of a Consensus agreement: the locked revision
// and its Markdown, the participant binding, the normalized room command, the
// rules that admit a command, and the rule that turns decisions into an
// outcome. It is pure: no I/O and no clock reads (callers pass now), so every
// rule is tested exhaustively without a database.
package room

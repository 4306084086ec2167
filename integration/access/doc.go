// Package access decides who may call the engine's operator API: the
// roles and permissions, the one access table that maps every API
// operation to what it needs, API tokens, and the audit log.
//
// Roles are ordered: viewer (reads), operator (a viewer who may act:
// resend, edit, dismiss, pause, drain), admin (an operator who manages
// tokens and accounts). Two permissions go beyond any role, because they
// let a caller see what the role alone does not: payloads (read message
// payloads and outputs, which hold patient data) and audit (read the audit
// log). An admin has neither unless granted.
//
// Tokens are "dux_" followed by 52 base32 characters (32 random bytes).
// Only their SHA-256 is stored (ixstore.Token.Hash), so the database does
// not hold anything that can call the API; a token is looked up on every
// call, so revoking it takes effect on the next one.
//
// The audit log is written through the same store; a read of a payload is
// written before the payload is answered, and an action's row commits in
// the action's transaction (Store.Audit takes it), so the log never misses
// what happened and never shows what did not.
package access

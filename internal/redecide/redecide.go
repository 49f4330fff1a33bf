// Package redecide is a path between two packages of this module, not an
// API: it lets package agent decide one tool call more than once (its
// Guard decides a call before it reads the call's history, and again
// with it) while the call's payload is read and its fingerprint computed
// only once. Package preflight sets Decide when it is initialized.
package redecide

import "github.com/agentpreflight/preflight/strictjson"

// Memo is what a decision kept of the tool call it decided, for the next
// decision of the same call: the payload parsed and, once computed, the
// fingerprint. The zero Memo keeps nothing. Its fields are written and
// read by package preflight alone; its holder calls Release once it
// decides no more.
type Memo struct {
	// Request is the copy of tool.request that Payload was parsed from.
	Request []byte
	// Payload is Request parsed (a scratch tree).
	Payload strictjson.Value
	// Provider, Operation and Fingerprint: the fingerprint of the call of
	// Provider's Operation with Payload; empty until computed.
	Provider, Operation, Fingerprint string
}

// Release gives the memo's parsed payload back and empties the memo.
func (m *Memo) Release() {
	m.Payload.Release()
	*m = Memo{}
}

// Decide is set by package preflight to a
//
//	func(c *preflight.Catalog, req preflight.ToolCallRequest, m Memo) (*preflight.ToolCallDecision, Memo, error)
//
// that answers exactly as c.Decide(&req), and reads req.Tool with what m
// kept when m was kept from a request whose tool.request had the same
// bytes (and, for the fingerprint, the same provider and operation). It
// returns the Memo to pass to the next decision of the call: m itself,
// added to, or a new one that replaced it (m is then released). A Memo
// is held by one goroutine at a time.
var Decide any

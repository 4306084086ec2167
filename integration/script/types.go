package script

import (
	"errors"
	"fmt"
	"time"
)

// Format names how a payload is encoded; it decides what the transform
// receives and how its result is written.
type Format string

// The formats an interface reads and writes.
const (
	// FormatHL7v2 gives the transform an HL7 message object (hl7.parse).
	FormatHL7v2 Format = "hl7v2"
	// FormatJSON gives the transform the parsed JSON value.
	FormatJSON Format = "json"
	// FormatCSV gives the transform the record keyed by the header (an array
	// of records when the payload holds several rows).
	FormatCSV Format = "csv"
	// FormatText gives the transform the payload as a string.
	FormatText Format = "text"
)

// Valid reports whether f is one of the known formats.
func (f Format) Valid() bool {
	switch f {
	case FormatHL7v2, FormatJSON, FormatCSV, FormatText:
		return true
	}
	return false
}

// Meta is what the transform learns about the message besides its payload
// (the second argument, meta: id, receivedAt, destination, origin).
type Meta struct {
	// ID is the interface message's ID.
	ID string
	// ReceivedAt is when the source stored the message; zero gives null.
	ReceivedAt time.Time
	// Destination is the destination the transform runs for.
	Destination string
	// Origin is the ID of the message this one was routed from; empty gives
	// null.
	Origin string
}

// Input is one message handed to a transform.
type Input struct {
	// Format is how Payload is encoded.
	Format Format
	// Payload is the message, UTF-8 encoded.
	Payload []byte
	// Meta describes the message.
	Meta Meta
	// OutputFormat is how the result is written; empty means Format.
	OutputFormat Format
}

// Kind says what a transform decided.
type Kind uint8

// The outcomes of a call.
const (
	// KindOutput: the transform produced Output.
	KindOutput Kind = iota + 1
	// KindFiltered: the transform returned null or undefined, or called
	// filter(reason); nothing is sent.
	KindFiltered
	// KindQuarantined: the transform threw, called quarantine(reason), or
	// the payload or result could not be decoded or written.
	KindQuarantined
	// KindTransient: the transform called transient(reason); retry later,
	// keeping order.
	KindTransient
	// KindRunaway: the call was stopped (timeout or heap ceiling) and its
	// isolate replaced.
	KindRunaway
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case KindOutput:
		return "output"
	case KindFiltered:
		return "filtered"
	case KindQuarantined:
		return "quarantined"
	case KindTransient:
		return "transient"
	case KindRunaway:
		return "runaway"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Cause says why a runaway was stopped.
type Cause uint8

// Runaway causes.
const (
	// CauseTimeout: the call ran past its interface's timeout.
	CauseTimeout Cause = iota + 1
	// CauseHeap: the isolate's heap passed the ceiling (or V8's own limit).
	CauseHeap
)

// String returns the cause's name.
func (c Cause) String() string {
	switch c {
	case CauseTimeout:
		return "timeout"
	case CauseHeap:
		return "heap"
	}
	return "none"
}

// Result is what a call decided.
type Result struct {
	// Kind is the outcome.
	Kind Kind
	// Output is the serialised result (KindOutput only).
	Output []byte
	// Reason explains every kind but KindOutput.
	Reason string
	// Stack is a short JavaScript stack (the interface's own frames) for a
	// quarantine raised by a throw or by quarantine().
	Stack string
	// Cause is set for KindRunaway.
	Cause Cause
}

// Errors a Host returns; check them with errors.Is.
var (
	// ErrClosed: the host was closed.
	ErrClosed = errors.New("script: host is closed")
	// ErrUnknownInterface: no interface of that name is loaded.
	ErrUnknownInterface = errors.New("script: unknown interface")
	// ErrInterfaceStopped: the interface ran away MaxRunaways times in a row
	// and stays stopped until it is loaded again.
	ErrInterfaceStopped = errors.New("script: interface stopped after repeated runaways")
	// ErrUnknownFunction: the interface defines no function of that name.
	ErrUnknownFunction = errors.New("script: function not defined")
	// ErrBadInput: the call's arguments are malformed (unknown format...).
	ErrBadInput = errors.New("script: bad input")
	// ErrBadInterface: an interface cannot be loaded; the error is a
	// *LoadError naming the file and line.
	ErrBadInterface = errors.New("script: bad interface")
)

// LoadError is a problem found while loading an interface's code: a syntax
// error, a throw in top-level code, a bad require, a missing function.
type LoadError struct {
	// Interface is the interface's name.
	Interface string
	// File is the file's path inside the interface folder; empty when the
	// problem is not in one file.
	File string
	// Line and Column locate the problem (1-based); zero when unknown.
	Line, Column int
	// Message describes the problem.
	Message string
}

// Error formats the problem as "interface: file:line:column: message".
func (e *LoadError) Error() string {
	loc := e.File
	if loc != "" && e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, e.Line)
		if e.Column > 0 {
			loc = fmt.Sprintf("%s:%d", loc, e.Column)
		}
	}
	if loc == "" {
		return fmt.Sprintf("interface %s: %s", e.Interface, e.Message)
	}
	return fmt.Sprintf("interface %s: %s: %s", e.Interface, loc, e.Message)
}

// Unwrap makes errors.Is(err, ErrBadInterface) hold.
func (e *LoadError) Unwrap() error { return ErrBadInterface }

// Status is an interface's health as the host sees it.
type Status struct {
	// Stopped is true after MaxRunaways runaways in a row.
	Stopped bool
	// Runaways counts runaways since the last call that completed.
	Runaways int
	// LastRunaway describes the latest runaway.
	LastRunaway string
}

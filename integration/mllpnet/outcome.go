package mllpnet

import (
	"errors"

	"github.com/ductus/ductus/integration/hl7"
)

// Outcome is what a sender does after a Send.
type Outcome int

// The outcomes of a Send.
const (
	// Sent: the peer accepted the message (AA or CA).
	Sent Outcome = iota
	// Retry: try again later, in order: the peer could not take it now
	// (AE or CE), or there was no usable answer (timeout, connection
	// error, an ACK out of step).
	Retry
	// Reject: the peer refused the message (AR or CR), or it cannot be
	// sent at all; retrying will not help, so an engine quarantines it.
	Reject
)

func (o Outcome) String() string {
	switch o {
	case Sent:
		return "sent"
	case Retry:
		return "retry"
	case Reject:
		return "reject"
	}
	return "unknown"
}

// OutcomeOf classifies what Client.Send returned: AA/CA → Sent; AE/CE →
// Retry; AR/CR → Reject; an error → Retry, except ErrMessage (a payload
// that is not sendable) → Reject and ErrClientClosed → Retry (another
// client will send it).
func OutcomeOf(ack Ack, err error) Outcome {
	if err != nil {
		if errors.Is(err, ErrMessage) {
			return Reject
		}
		return Retry
	}
	switch ack.Code {
	case hl7.CodeAA, hl7.CodeCA:
		return Sent
	case hl7.CodeAE, hl7.CodeCE:
		return Retry
	}
	return Reject
}

package mllpnet

import (
	"bytes"
	"sync/atomic"
)

// Stats counts what a Server has seen. The counters are atomics, so an
// engine may read them at any time (for Prometheus, say) while the server
// runs; Snapshot copies them into plain numbers.
type Stats struct {
	// ConnectionsOpen is the number of connections being served now.
	ConnectionsOpen atomic.Int64
	// Connections counts accepted connections, Refused those closed at once
	// because MaxConnections were open.
	Connections, Refused atomic.Uint64
	// Frames counts complete frames read (HL7 or not); BytesIn and BytesOut
	// count socket bytes.
	Frames, BytesIn, BytesOut atomic.Uint64
	// NotHL7 counts frames answered AR because they did not parse, TooLarge
	// frames over the size limit, FramingErrors other framing problems
	// (junk between frames, bad end blocks, abandoned frames).
	NotHL7, TooLarge, FramingErrors atomic.Uint64
	// IdleTimeouts and ReadTimeouts count connections closed by them.
	IdleTimeouts, ReadTimeouts atomic.Uint64
	// ACKs by code, as written to the socket (whoever built them); AckOther
	// counts replies whose MSA-1 could not be read, NoAck handler answers
	// that were empty (nothing sent).
	AA, AE, AR, CA, CE, CR, AckOther, NoAck atomic.Uint64
	// HandlerPanics counts handler calls that panicked (answered AE).
	HandlerPanics atomic.Uint64
}

// StatsSnapshot is a copy of Stats at one moment.
type StatsSnapshot struct {
	ConnectionsOpen                  int64
	Connections, Refused             uint64
	Frames, BytesIn, BytesOut        uint64
	NotHL7, TooLarge, FramingErrors  uint64
	IdleTimeouts, ReadTimeouts       uint64
	AA, AE, AR, CA, CE, CR, AckOther uint64
	NoAck, HandlerPanics             uint64
}

// Snapshot copies the counters. Each is read atomically, the set is not:
// a snapshot taken under load may be a frame or two apart between fields.
func (s *Stats) Snapshot() StatsSnapshot {
	return StatsSnapshot{
		ConnectionsOpen: s.ConnectionsOpen.Load(),
		Connections:     s.Connections.Load(), Refused: s.Refused.Load(),
		Frames: s.Frames.Load(), BytesIn: s.BytesIn.Load(), BytesOut: s.BytesOut.Load(),
		NotHL7: s.NotHL7.Load(), TooLarge: s.TooLarge.Load(), FramingErrors: s.FramingErrors.Load(),
		IdleTimeouts: s.IdleTimeouts.Load(), ReadTimeouts: s.ReadTimeouts.Load(),
		AA: s.AA.Load(), AE: s.AE.Load(), AR: s.AR.Load(), CA: s.CA.Load(), CE: s.CE.Load(), CR: s.CR.Load(),
		AckOther: s.AckOther.Load(), NoAck: s.NoAck.Load(), HandlerPanics: s.HandlerPanics.Load(),
	}
}

func (s *Stats) countAck(code string) {
	switch code {
	case "AA":
		s.AA.Add(1)
	case "AE":
		s.AE.Add(1)
	case "AR":
		s.AR.Add(1)
	case "CA":
		s.CA.Add(1)
	case "CE":
		s.CE.Add(1)
	case "CR":
		s.CR.Add(1)
	default:
		s.AckOther.Add(1)
	}
}

// AckCode reads MSA-1 of an acknowledgement without parsing the whole
// message: the field separator is the byte after "MSH", the MSA segment
// is found after a CR or LF. It returns "" when there is no readable MSA-1.
// It exists so that counting the ACK codes a server writes stays cheap.
func AckCode(ack []byte) string {
	if len(ack) < 4 || !bytes.HasPrefix(ack, []byte("MSH")) {
		return ""
	}
	fs := ack[3]
	rest := ack
	for {
		i := bytes.IndexAny(rest, "\r\n")
		if i < 0 {
			return ""
		}
		rest = rest[i+1:]
		if len(rest) >= 4 && rest[0] == 'M' && rest[1] == 'S' && rest[2] == 'A' && rest[3] == fs {
			f := rest[4:]
			for j, c := range f {
				if c == fs || c == '\r' || c == '\n' {
					f = f[:j]
					break
				}
			}
			// MSA-1 may have components; the code is the first.
			if len(ack) > 4 {
				if j := bytes.IndexByte(f, ack[4]); j >= 0 {
					f = f[:j]
				}
			}
			f = bytes.TrimSpace(f)
			for _, code := range [...]string{"AA", "AE", "AR", "CA", "CE", "CR"} {
				if bytes.EqualFold(f, []byte(code)) {
					return code
				}
			}
			return ""
		}
	}
}

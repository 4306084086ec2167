// Package mllpnet carries HL7 v2 over MLLP on real TCP connections: the
// Server is an MLLP source's listener, the Client an MLLP destination's
// sender. Framing itself is package mllp's; this package owns sockets,
// deadlines, the order of ACKs and what an error means for a connection.
//
// # The server
//
// Each connection is served by one goroutine that reads a frame, hands its
// payload to the Handler, writes the ACK the handler returns, and only then
// reads the next frame. Messages on one connection are therefore handled
// strictly in arrival order and their ACKs go out in the same order, which
// is what a sender that pipelines several frames expects and what a
// per-key ordered feed needs.
//
// The handler decides AA, AE or AR (or CA, CE, CR) because only it knows
// whether the message was stored. Whatever the code, the server writes the
// ACK and reads the next frame on the same connection: no ACK, AR
// included, closes it. The server answers by itself only what never
// reaches the handler:
//
//   - A frame that is not HL7 (hl7.Parse fails, including an empty frame):
//     AR built by hl7.BuildRejectACK with the parser's reason. The
//     connection stays open.
//   - A frame over MaxMessageBytes: AR with "message too large", sent as
//     soon as the limit is passed. The first kilobyte of every frame is
//     kept aside, so the AR carries the refused message's MSH-10 in MSA-2
//     and a careful sender can match it and give up on that message rather
//     than resending it forever. The rest of the frame is skipped and the
//     connection stays open: closing a socket while the peer is still
//     writing sends a TCP reset, which can destroy the AR in flight, so
//     skipping is the safer way to be heard.
//   - A frame that ends in 0x1C followed by something other than 0x0D:
//     AR naming the bad end block, also with the salvaged MSH-10; the
//     sender is waiting for an answer to that frame. The connection stays
//     open.
//   - A frame abandoned by a new start block (0x0B inside a frame): no
//     answer, since the sender has moved on and an AR now would be read as
//     the answer to its next message; logged.
//   - Bytes outside any frame: before the connection's first frame they
//     mean the peer does not speak MLLP (an HTTP request, a TLS hello on a
//     plain port), so the connection is closed; after a good frame they are
//     logged once per run and skipped up to the next start block.
//
// # Timeouts
//
// IdleTimeout runs from the connection's start or its last ACK until a new
// frame begins; bytes between frames (line ends some senders use as
// keep-alives, or junk) do not reset it. ReadTimeout runs from the start
// block of a frame to its end. Either expiring closes the connection; no
// ACK is sent, because no message was received. The handler's own time
// counts against neither.
//
// # Stopping
//
// Shutdown closes the listener, closes connections that are waiting for a
// frame, lets a handler that is running finish and write its ACK, and then
// closes that connection too. Frames already read but not yet handled get
// no ACK; the sender resends them, which is safe because a source dedupes
// and an unacknowledged message was never promised. Close does the same
// without waiting and cancels the handlers' context.
//
// # The client
//
// A Client keeps one connection to its peer and sends one message at a
// time: write the frame, wait for the ACK, check that MSA-2 is the
// message's MSH-10. Anything that leaves the connection in doubt (a
// timeout, a read or write error, an ACK for another message, a reply that
// is not an ACK) closes it, and the next Send dials again. An ACK, AE and
// AR included, is an answer, not a doubt: the connection stays open for
// the next message unless ClientOptions.CloseAfterAck asks for a
// connection per message. Dials that fail,
// and connections that fail before their first ACK, make the next dial
// wait: 1 s, doubling up to 60 s by default; the first ACK resets it.
// OutcomeOf turns a Send's answer into what an engine does next: sent,
// retry or reject.
package mllpnet

// Package hl7 reads, edits and writes HL7 version 2 messages, builds and
// reads acknowledgements, and generates realistic test messages.
//
// # Why the message stays text
//
// An integration engine mostly passes messages through: it reads a few fields
// (the ordering key, MSH-10 for dedupe, the message type) and forwards the
// rest untouched. So a Message keeps each segment's original text and splits
// a segment into fields only when one of its fields is read, and a field
// into repetitions, components and subcomponents only along the path asked
// for. A segment that was never written is serialised from its original
// text, which is why an unchanged message parsed from CR-terminated input
// comes back byte-identical, unknown escape sequences, trailing separators and
// all.
//
// # Grammar
//
// The delimiters come from MSH-1 (the field separator) and MSH-2 (component,
// repetition, escape and subcomponent characters, and the optional v2.7
// truncation character). Segments may end in CR, LF or CRLF; empty lines are
// skipped; a UTF-8 byte order mark before MSH is ignored. Output always ends
// segments with CR, and ends the last segment with CR only if the input did.
//
// Paths are written as an analyst writes them: "PID-3", "PID-3.1",
// "PID-3.1.2", "PID-3[2].1" (the second repetition) and "OBX[2]-5" (the
// second OBX segment); every number is 1-based. MSH is numbered as the
// standard numbers it: MSH-1 is the field separator itself and MSH-2 the
// encoding characters; both are read-only. A path without a repetition
// reads the first repetition. This is the same grammar, with the same
// answers, as the JavaScript API of the script host.
//
// Get decodes the escape sequences \F\ \S\ \T\ \R\ \E\, \P\ (the truncation
// character) and \Xhh...\; formatting and site-defined sequences (\.br\,
// \H\, \N\, \Zxx\, ...) are returned as they stand, since only the receiver
// knows what they mean. Set encodes its value as one literal value and adds
// the segment, fields, repetitions and components it needs.
package hl7

package config

import (
	"fmt"
	"regexp"
)

// Key paths are checked here for syntax only, so that validate catches a key
// written for the wrong format; reading them from messages is the format
// packages' job. The HL7 form is meant to be a strict subset of what
// integration/hl7's ParsePath reads (upper-case segment names, positions 1 to
// 9999, a segment always named), so that a key that passes here parses there.

var (
	hl7PathPattern = regexp.MustCompile(`^[A-Z][A-Z0-9]{2}(\[[1-9][0-9]{0,3}\])?-[1-9][0-9]{0,3}(\[[1-9][0-9]{0,3}\])?(\.[1-9][0-9]{0,3}){0,2}$`)
	jsonStep       = `(\.[A-Za-z_][A-Za-z0-9_-]*|\["(?:[^"\\]|\\.)*"\]|\[[0-9]+\])`
	jsonPathRe     = regexp.MustCompile(`^\$` + jsonStep + `+$`)
	csvPathRe      = regexp.MustCompile(`^\$(\.[A-Za-z_][A-Za-z0-9_-]*|\["(?:[^"\\]|\\.)*"\])$`)
)

// parseKey checks a key path against the format of the messages it is read
// from and returns the key, or a message saying what is wrong.
func parseKey(path string, f Format) (Key, string) {
	switch f {
	case FormatHL7v2:
		if hl7PathPattern.MatchString(path) {
			return Key{Path: path, Kind: KeyHL7}, ""
		}
		return Key{}, fmt.Sprintf("want an HL7 path such as PID-3.1 or MSH-10 for format hl7v2, got %q", path)
	case FormatJSON:
		if jsonPathRe.MatchString(path) {
			return Key{Path: path, Kind: KeyJSON}, ""
		}
		return Key{}, fmt.Sprintf("want a JSON path such as $.patient.mrn for format json, got %q", path)
	case FormatCSV:
		if csvPathRe.MatchString(path) {
			return Key{Path: path, Kind: KeyJSON}, ""
		}
		return Key{}, fmt.Sprintf(`want a column such as $.mrn or $["MRN no"] for format csv, got %q`, path)
	case FormatText:
		return Key{}, "format text has no fields to read a key from"
	}
	// The format itself is wrong (reported already).
	return Key{Path: path}, ""
}

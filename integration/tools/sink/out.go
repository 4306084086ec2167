package sink

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
)

// The out file (-out) holds one accepted message per line, in the order
// the sink accepted them. A message's bytes are escaped so that a line is
// exactly one message and decodes back to its exact bytes:
//
//	CR (the segment terminator) → \r
//	LF                          → \n
//	backslash                   → \\
//
// Everything else is written as it is. So a message "MSH|^~\&|...<CR>PID|...<CR>"
// is the line `MSH|^~\\&|...\rPID|...\r`. HL7's own escape sequences
// (\F\, \S\, ...) survive because every backslash is doubled. Each line is
// written with a single write call before the message is acknowledged,
// so whatever a sender saw accepted is in the file, complete, even if the
// sink is killed afterwards.

// EncodeLine returns msg escaped as one out-file line, with its LF.
func EncodeLine(msg []byte) []byte {
	out := make([]byte, 0, len(msg)+len(msg)/16+1)
	for _, c := range msg {
		switch c {
		case '\r':
			out = append(out, '\\', 'r')
		case '\n':
			out = append(out, '\\', 'n')
		case '\\':
			out = append(out, '\\', '\\')
		default:
			out = append(out, c)
		}
	}
	return append(out, '\n')
}

// DecodeLine reverses EncodeLine for one line (with or without its LF).
func DecodeLine(line []byte) ([]byte, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	out := make([]byte, 0, len(line))
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\r':
			return nil, fmt.Errorf("sink: byte %d: a raw CR in an out-file line (a CR is written as \\r)", i)
		case c != '\\':
			out = append(out, c)
			continue
		case i+1 == len(line):
			return nil, fmt.Errorf("sink: byte %d: the line ends in a lone backslash", i)
		}
		i++
		switch line[i] {
		case 'r':
			out = append(out, '\r')
		case 'n':
			out = append(out, '\n')
		case '\\':
			out = append(out, '\\')
		default:
			return nil, fmt.Errorf("sink: byte %d: unknown escape \\%c (want \\r, \\n or \\\\)", i-1, line[i])
		}
	}
	return out, nil
}

// ReadOut reads an out file back into its messages, in file order.
func ReadOut(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	defer f.Close()
	var msgs [][]byte
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				return msgs, fmt.Errorf("sink: %s:%d: the last line is incomplete (no line end)", path, n)
			}
			m, derr := DecodeLine(line)
			if derr != nil {
				return msgs, fmt.Errorf("%s:%d: %w", path, n, derr)
			}
			msgs = append(msgs, m)
		}
		if err == io.EOF {
			return msgs, nil
		}
		if err != nil {
			return msgs, fmt.Errorf("sink: reading %s: %w", path, err)
		}
	}
}

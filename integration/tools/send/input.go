package send

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ductus/ductus/integration/format"
	"github.com/ductus/ductus/integration/hl7"
)

// item is one message to send, with where it came from.
type item struct {
	payload []byte
	id      string // MSH-10
	key     string // PID-3.1, "" when absent
	from    string // "file:bytes a-b" or "generated #n", for messages
}

// problem is a message that could not be read (a bad record in a file):
// it is reported and counted, and the run goes on.
type problem struct {
	from, reason string
}

// produce calls emit for every message of the run, in order, and report
// for every unreadable one. It returns the first error that stops the
// input (a file that cannot be opened or read) or ctx's.
func produce(ctx context.Context, o *Options, emit func(item) error, report func(problem)) error {
	if len(o.Files) == 0 {
		return generate(ctx, o, emit)
	}
	sent := 0
	for _, path := range o.Files {
		err := readFile(ctx, path, func(it item) error {
			if o.Count > 0 && sent >= o.Count {
				return errEnough
			}
			sent++
			return emit(it)
		}, report)
		if errors.Is(err, errEnough) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var errEnough = errors.New("send: -count messages read")

func generate(ctx context.Context, o *Options, emit func(item) error) error {
	var types []string
	for _, t := range strings.Split(o.Types, ",") {
		if t = strings.TrimSpace(t); t != "" {
			types = append(types, t)
		}
	}
	g, err := hl7.NewGenerator(hl7.GeneratorOptions{
		Seed: o.Seed, Patients: o.Patients, Types: types, ControlIDPrefix: o.Prefix, Enhanced: o.Enhanced,
	})
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	for i := range o.count() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s := g.Next()
		if err := emit(item{payload: s.Bytes, id: s.ControlID, key: s.MRN, from: fmt.Sprintf("generated #%d", i+1)}); err != nil {
			return err
		}
	}
	return nil
}

// readFile splits one file into HL7 messages (any segment terminator) and
// emits each with CR segment ends, as MLLP peers expect.
func readFile(ctx context.Context, path string, emit func(item) error, report func(problem)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	defer f.Close()
	sp, err := format.NewSplitter(f, format.SplitHL7, 0, format.SplitOptions{})
	if err != nil {
		return fmt.Errorf("send: %s: %w", path, err)
	}
	found := 0
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rec, err := sp.Next()
		if err == io.EOF {
			break
		}
		var re *format.RecordError
		if errors.As(err, &re) {
			report(problem{from: fmt.Sprintf("%s:bytes %d-%d", path, re.Start, re.End), reason: re.Reason})
			continue
		}
		if err != nil {
			return fmt.Errorf("send: reading %s: %w", path, err)
		}
		found++
		from := fmt.Sprintf("%s:bytes %d-%d", path, rec.Start, rec.End)
		m, err := hl7.Parse(rec.Data)
		if err != nil {
			report(problem{from: from, reason: err.Error()})
			continue
		}
		if m.ControlID() == "" {
			report(problem{from: from, reason: "MSH-10 (message control ID) is empty, so its ACK could not be matched"})
			continue
		}
		if err := emit(item{payload: m.Bytes(), id: m.ControlID(), key: m.Get("PID-3.1"), from: from}); err != nil {
			return err
		}
	}
	if found == 0 {
		report(problem{from: path, reason: "no HL7 message in the file (a message starts with an MSH segment)"})
	}
	return nil
}

// runPrefix returns a fresh MSH-10 prefix for generated messages, so that
// two runs with the same seed do not collide under a receiver's MSH-10
// dedupe: "S" and 8 random base-32 characters.
func runPrefix() string {
	const digits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	var b [8]byte
	_, _ = rand.Read(b[:])
	out := []byte{'S'}
	for _, c := range b {
		out = append(out, digits[c%32])
	}
	return string(out)
}

package config

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with a project, located as precisely as the
// configuration allows, so that a user can jump straight to it.
type Problem struct {
	// File is the file the problem is in, relative to the project folder and
	// slash-separated ("interfaces/adt/interface.yaml"), or "." for the
	// project folder itself.
	File string
	// Line and Column are 1-based; 0 means the problem concerns the whole
	// file (for example a file that is missing).
	Line   int
	Column int
	// Field is the dotted key path of the setting ("destinations.emr.retry.max",
	// "scripts[1]"), or "" when the problem is not about one setting.
	Field string
	// Message says what is wrong and, where it helps, what is wanted.
	Message string
}

// String formats the problem as "file:line: field: message", leaving out the
// parts that are unknown.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// ValidationError is what Load returns when the project has problems. It holds
// every problem found in one pass, sorted by file and line, so a user can fix
// them all at once. Use errors.As to get at the list.
type ValidationError struct {
	Problems []Problem
}

// Error prints one line per problem.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// problems collects problems during a load. It is not safe for concurrent use:
// a load runs on one goroutine.
type problems struct {
	list []Problem
}

func (ps *problems) add(p Problem) {
	ps.list = append(ps.list, p)
}

func (ps *problems) addf(file string, line, col int, field, format string, args ...any) {
	ps.add(Problem{File: file, Line: line, Column: col, Field: field, Message: fmt.Sprintf(format, args...)})
}

// sorted returns the problems sorted by file, line, column and field, with
// exact repeats removed (a shared YAML anchor can make the same value fail
// twice).
func (ps *problems) sorted() []Problem {
	out := append([]Problem(nil), ps.list...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File {
			return fileOrder(a.File) < fileOrder(b.File)
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		return a.Message < b.Message
	})
	uniq := out[:0]
	for i, p := range out {
		if i > 0 && p == out[i-1] {
			continue
		}
		uniq = append(uniq, p)
	}
	return uniq
}

// fileOrder sorts the project's own files first (ductus.yaml, then
// resources.yaml), then everything else by name, which is the order a reader
// meets them in.
func fileOrder(f string) string {
	switch f {
	case ".":
		return "0"
	case engineFile:
		return "1"
	case resourcesFile:
		return "2"
	}
	return "3" + f
}

package config

import (
	"fmt"
	"path"
	"strings"
	"text/template"
	"time"
)

// DefaultFileName is a file destination's name template when none is given.
const DefaultFileName = "{{.ID}}.{{.Ext}}"

// FileDestination writes each message to a file in a folder. Writing through
// a temporary name, fsync and rename is the sender's job.
type FileDestination struct {
	Path string // absolute folder
	Name string // the name template as written
	tmpl *template.Template
	ext  string
	in   string
	dest string
}

// FileMessage is what the sender knows about the message it is writing.
type FileMessage struct {
	ID         string
	ReceivedAt time.Time // in the zone the engine wants Date in
	Key        string    // the ordering key's value, "" when none
}

// FileNameData is what a name template sees: {{.ID}}, {{.ReceivedAt}} (a
// time.Time, so {{.ReceivedAt.Format "150405"}} works), {{.Date}}
// (ReceivedAt as 2006-01-02), {{.Key}}, {{.Interface}}, {{.Destination}} and
// {{.Ext}} (the output format's extension: hl7, json, csv, txt).
type FileNameData struct {
	ID          string
	ReceivedAt  time.Time
	Date        string
	Key         string
	Interface   string
	Destination string
	Ext         string
}

// FileName returns the file's name relative to Path, which may contain "/" to
// make subfolders. ID and Key are made safe for file names first (anything
// but letters, digits, '.', '_' and '-' becomes '_'), so a key cannot make
// a folder or climb out of Path.
func (f *FileDestination) FileName(m FileMessage) (string, error) {
	name, err := f.fileName(m)
	if err != nil {
		return "", fmt.Errorf("config: file name template %q: %w", f.Name, err)
	}
	return name, nil
}

func (f *FileDestination) fileName(m FileMessage) (string, error) {
	data := FileNameData{
		ID:          safeNamePart(m.ID),
		ReceivedAt:  m.ReceivedAt,
		Date:        m.ReceivedAt.Format("2006-01-02"),
		Key:         safeNamePart(m.Key),
		Interface:   f.in,
		Destination: f.dest,
		Ext:         f.ext,
	}
	var b strings.Builder
	if err := f.tmpl.Execute(&b, data); err != nil {
		return "", err
	}
	name := b.String()
	if msg := checkFileName(name); msg != "" {
		return "", fmt.Errorf("gave %q: %s", name, msg)
	}
	return name, nil
}

func safeNamePart(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// checkFileName returns what is wrong with a produced name, or "".
func checkFileName(name string) string {
	switch {
	case name == "":
		return "the name is empty"
	case strings.ContainsAny(name, "\\\x00\r\n"):
		return "the name contains a backslash or control character"
	case strings.HasPrefix(name, "/"):
		return "the name must be relative to the destination's folder"
	case path.Clean(name) != name:
		return "the name has empty, . or .. parts"
	case strings.HasPrefix(path.Base(name), "."):
		return "the name must not start with a dot (dot-files are temporary and skipped by file sources)"
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "the name must not climb out of the destination's folder"
		}
	}
	return ""
}

// compileFileName parses and test-runs a name template. It returns the
// destination, a problem message ("" when fine) and a warning ("" when
// none).
func compileFileName(dir, text string, ext, in, dest string) (*FileDestination, string, string) {
	f := &FileDestination{Path: dir, Name: text, ext: ext, in: in, dest: dest}
	t, err := template.New("name").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Sprintf("bad name template: %v", strings.TrimPrefix(err.Error(), "template: name:")), ""
	}
	f.tmpl = t
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, err := f.fileName(FileMessage{ID: "1001", ReceivedAt: at, Key: "K1"})
	if err != nil {
		return nil, "bad name template: " + strings.TrimPrefix(err.Error(), "template: name:"), ""
	}
	b, _ := f.fileName(FileMessage{ID: "1002", ReceivedAt: at, Key: "K1"})
	warn := ""
	if a == b {
		warn = fmt.Sprintf("name %q gives every message of a day the same file name (add {{.ID}}): later files replace earlier ones", text)
	}
	return f, "", warn
}

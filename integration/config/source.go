package config

import (
	"path/filepath"
	"strings"
	"time"
)

// Defaults of sources.
const (
	DefaultMaxMessageBytes = 1 << 20 // 1MiB
	DefaultIdleTimeout     = 5 * time.Minute
	DefaultReadTimeout     = 30 * time.Second
	DefaultMaxBodyBytes    = 10 << 20 // 10MiB
	DefaultPoll            = time.Second
	DefaultMaxFileBytes    = 256 << 20 // 256MiB
	DefaultMoveTo          = "done"
)

var sourceTypes = []string{string(SourceMLLP), string(SourceHTTP), string(SourceFile), string(SourceSchedule), string(SourceInternal)}

var sourceKeys = map[string][]string{
	"mllp":     {"listen", "max_message_bytes", "idle_timeout", "read_timeout"},
	"http":     {"listen", "path", "max_body_bytes"},
	"file":     {"path", "pattern", "poll", "split", "after", "move_to", "max_file_bytes"},
	"schedule": {"every", "cron", "timezone"},
	"internal": {},
}

// sourceInfo is what the cross-checks need to know about a source.
type sourceInfo struct {
	listen     listenAddr
	listenLine int
	hasListen  bool
	folderLine int
	typeLine   int
}

// readSource reads an interface's source: mapping.
func readSource(o *obj, projectDir string) (src Source, info sourceInfo) {
	if !o.has("type") {
		o.known["type"] = true
		o.missing("type")
		return Source{}, info
	}
	typ := o.enum("type", "", sourceTypes...)
	src = Source{Type: SourceType(typ)}
	defer func() { info.typeLine = o.keyLine("type") }()
	switch src.Type {
	case SourceMLLP:
		s := &MLLPSource{}
		s.Listen, info = readListen(o)
		s.MaxMessageBytes = o.size("max_message_bytes", DefaultMaxMessageBytes)
		s.IdleTimeout = o.duration("idle_timeout", DefaultIdleTimeout, time.Millisecond)
		s.ReadTimeout = o.duration("read_timeout", DefaultReadTimeout, time.Millisecond)
		src.MLLP = s
	case SourceHTTP:
		s := &HTTPSource{}
		s.Listen, info = readListen(o)
		s.Path = o.str("path", "/")
		if !strings.HasPrefix(s.Path, "/") || strings.ContainsAny(s.Path, " ?#") {
			o.problem("path", "want a URL path starting with /, such as /lab, got %q", s.Path)
		}
		s.MaxBodyBytes = o.size("max_body_bytes", DefaultMaxBodyBytes)
		src.HTTP = s
	case SourceFile:
		src.File = readFileSource(o, projectDir)
		info.folderLine = o.keyLine("path")
	case SourceSchedule:
		src.Schedule = readSchedule(o)
	case SourceInternal:
	default:
		return src, info
	}
	o.finish(elsewhere(sourceKeys, typ, "sources"))
	return src, info
}

func readListen(o *obj) (string, sourceInfo) {
	var info sourceInfo
	listen, ok := o.reqStr("listen")
	if !ok {
		return "", info
	}
	addr, msg := parseListen(listen)
	if msg != "" {
		o.problem("listen", "%s", msg)
		return listen, info
	}
	info.listen, info.hasListen = addr, true
	info.listenLine = o.keyLine("listen")
	if e, ok := o.get("listen"); ok {
		info.listenLine = e.val.Line
	}
	return listen, info
}

func readFileSource(o *obj, projectDir string) *FileSource {
	s := &FileSource{}
	if p, ok := o.reqStr("path"); ok {
		s.Path = resolvePath(projectDir, p)
	}
	s.Pattern = o.str("pattern", "*")
	if _, err := filepath.Match(s.Pattern, "x"); err != nil || strings.ContainsAny(s.Pattern, `/\`) || s.Pattern == "" {
		o.problem("pattern", "want a file name pattern such as *.hl7 (no folders), got %q", s.Pattern)
	}
	s.Poll = o.duration("poll", DefaultPoll, 10*time.Millisecond)
	s.Split = Split(o.enum("split", string(SplitNone), string(SplitNone), string(SplitRecords)))
	s.After = After(o.enum("after", string(AfterMove), string(AfterMove), string(AfterDelete)))
	moveTo := o.str("move_to", "")
	if moveTo != "" && s.After != AfterMove {
		o.problem("move_to", "move_to applies only with after: move")
	}
	if s.After == AfterMove {
		if moveTo == "" {
			moveTo = DefaultMoveTo
		}
		if filepath.IsAbs(filepath.FromSlash(moveTo)) {
			s.MoveTo = filepath.Clean(filepath.FromSlash(moveTo))
		} else if s.Path != "" {
			s.MoveTo = filepath.Join(s.Path, filepath.FromSlash(moveTo))
		}
		if s.Path != "" && s.MoveTo == s.Path {
			o.problem("move_to", "move_to must be another folder than path, or finished files would be read again")
		}
	}
	if o.has("max_file_bytes") && s.Split == SplitRecords {
		o.known["max_file_bytes"] = true
		o.problem("max_file_bytes", "max_file_bytes applies only to split: none (split: records streams files of any size)")
	} else {
		s.MaxFileBytes = o.size("max_file_bytes", DefaultMaxFileBytes)
	}
	if s.Split == SplitRecords {
		s.MaxFileBytes = 0
	}
	return s
}

package config

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/ductus/ductus/integration/charset"
)

// Project is a loaded, checked project: every value resolved (substitutions
// done, paths absolute, defaults applied), ready for the engine to build its
// sources, destinations and lane actors from.
type Project struct {
	// Dir is the project folder, absolute.
	Dir string
	// Engine is ductus.yaml.
	Engine Engine
	// Resources is resources.yaml (empty when the file is absent).
	Resources Resources
	// Secrets is the secrets file's content (name → value), for the script
	// host's secret(); empty when ductus.yaml names no secrets file.
	Secrets map[string]string
	// Interfaces are sorted by name.
	Interfaces []*Interface
	// Warnings are things that are allowed but probably not meant, such as
	// an internal interface no route fills. They never stop a load.
	Warnings []Problem
}

// Interface returns the interface with the given name, or nil.
func (p *Project) Interface(name string) *Interface {
	for _, in := range p.Interfaces {
		if in.Name == name {
			return in
		}
	}
	return nil
}

// Engine is the engine-wide configuration from ductus.yaml.
type Engine struct {
	Database   Database
	Partitions int // default lanes per interface that has an ordering key
	Durability Durability
	// SecretsFile is the secrets file's absolute path, "" when none is named.
	SecretsFile string
	Script      ScriptLimits
	Runtime     Runtime
	API         API
	Log         Log
}

// Runtime tunes the actor runtime the engine runs on.
type Runtime struct {
	// Workers is how many activations (lane turns, schedules) the
	// process runs at once; 0 when ductus.yaml does not say, which leaves
	// the runtime's default (host.Config.Workers).
	Workers int
}

// Database says which backend to open.
type Database struct {
	// Driver is "sqlite", "postgres" or "mysql".
	Driver string
	// DSN is what the driver opens: for sqlite an absolute file path (or
	// ":memory:"), for postgres the URL as written, for mysql a
	// go-sql-driver/mysql DSN ("user:pass@tcp(host:port)/db").
	DSN string
	// Embedded is true for the default: SQLite at <project>/.ductus/ductus.db.
	Embedded bool
}

// Database drivers.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
	DriverMySQL    = "mysql"
)

// Durability trades commit latency against the window of acknowledged
// messages a power cut may lose.
type Durability string

// Durability levels.
const (
	// DurabilityStrict commits the intake as the database commits by
	// default (see REFERENCE.md for what that means on each backend).
	DurabilityStrict Durability = "strict"
	// DurabilityRelaxed lets PostgreSQL flush the intake's commits in the
	// background (faster; a machine crash, not an engine crash, can lose
	// the last acknowledged messages); MySQL and SQLite ignore it.
	DurabilityRelaxed Durability = "relaxed"
)

// ScriptLimits bound the JavaScript host.
type ScriptLimits struct {
	Timeout  time.Duration // per call, before TerminateExecution
	HeapMB   int           // per isolate, watched from outside
	Isolates int           // pool size; ductus.yaml's 0 is resolved to the number of CPUs
}

// API is the operator API's listener (integration/api, served by the
// engine).
type API struct {
	// Listen is host:port, or "" when ductus.yaml says "off".
	Listen string
}

// Log configures the engine's slog handler.
type Log struct {
	Level  slog.Level
	Format LogFormat
}

// LogFormat is the log handler's output.
type LogFormat string

// Log formats.
const (
	LogText LogFormat = "text"
	LogJSON LogFormat = "json"
)

// Resources is resources.yaml.
type Resources struct {
	// Connections by name.
	Connections map[string]*Connection
}

// ConnectionType is a kind of named connection.
type ConnectionType string

// Connection types.
const (
	ConnMLLP ConnectionType = "mllp"
	ConnHTTP ConnectionType = "http"
	ConnSFTP ConnectionType = "sftp"
)

// Connection is a named peer destinations refer to by name, so that
// addresses and credentials live in one place outside the interface code.
// Exactly one of MLLP, HTTP and SFTP is set, matching Type.
type Connection struct {
	Name string
	Type ConnectionType
	MLLP *MLLPConnection
	HTTP *HTTPConnection
	SFTP *SFTPConnection
}

// MLLPConnection is an MLLP peer.
type MLLPConnection struct {
	Host       string
	Port       int
	AckTimeout time.Duration
}

// HTTPConnection is an HTTP API: destinations may add a path to its URL and
// headers of their own.
type HTTPConnection struct {
	URL     string
	Headers map[string]string
	Timeout time.Duration
}

// SFTPConnection is an SFTP server. It is validated now; SFTP sources and
// destinations come later.
type SFTPConnection struct {
	Host       string
	Port       int
	User       string
	Password   string // "" when KeyFile is used
	KeyFile    string // absolute, "" when Password is used
	KnownHosts string // absolute
}

// Format is a message format.
type Format string

// Formats.
const (
	FormatHL7v2 Format = "hl7v2"
	FormatJSON  Format = "json"
	FormatCSV   Format = "csv"
	FormatText  Format = "text"
)

var formatNames = []string{string(FormatHL7v2), string(FormatJSON), string(FormatCSV), string(FormatText)}

// Ext is the usual file name extension for the format, without the dot.
func (f Format) Ext() string {
	switch f {
	case FormatHL7v2:
		return "hl7"
	case FormatText:
		return "txt"
	}
	return string(f)
}

// Interface is one interfaces/<name>/interface.yaml.
type Interface struct {
	Name        string // the folder's name
	Dir         string // absolute folder
	File        string // interface.yaml relative to the project, for messages
	Description string
	Format      Format // what the source produces and transforms receive
	Source      Source
	// Charset, when set, is the character set the source's bytes are
	// decoded from whatever they claim (MSH-18, a Content-Type charset):
	// for senders that mislabel their messages. Nil: what the message
	// says, else UTF-8.
	Charset *charset.Charset
	// OrderingKey is nil when messages are not ordered by a key: the
	// interface then has a single lane and is ordered as a whole.
	OrderingKey *Key
	// Partitions is the number of lanes: 1 without an ordering key.
	Partitions int
	Dedupe     *Dedupe // nil when off
	Scripts    []Script
	Timeout    time.Duration // per-call script timeout
	// Destinations are sorted by name.
	Destinations []*Destination
}

// Destination returns the destination with the given name, or nil.
func (in *Interface) Destination(name string) *Destination {
	for _, d := range in.Destinations {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// KeyKind says how a key path is read.
type KeyKind string

// Key kinds.
const (
	// KeyHL7 is an HL7 v2 path: SEG-F[.C[.S]], with optional 1-based
	// repetitions after the segment and the field: PID-3.1, OBX[2]-5, PID-3[2].1.
	KeyHL7 KeyKind = "hl7"
	// KeyJSON is a JSON path: $ then .name, ["name"] or [index] steps,
	// such as $.patient.mrn or $.ids[0]. For csv, one step: the column.
	KeyJSON KeyKind = "json"
)

// Key is where in a message an ordering or dedupe key is read from.
type Key struct {
	Path string
	Kind KeyKind
}

// Dedupe drops repeats of a key seen within a window.
type Dedupe struct {
	Key    Key
	Window time.Duration
}

// Script is one JavaScript file of an interface.
type Script struct {
	Name string // relative to the interface folder, slash-separated
	Path string // absolute
}

// SourceType is a kind of source.
type SourceType string

// Source types.
const (
	SourceMLLP     SourceType = "mllp"
	SourceHTTP     SourceType = "http"
	SourceFile     SourceType = "file"
	SourceSchedule SourceType = "schedule"
	// SourceInternal has no listener: only routes from other interfaces fill it.
	SourceInternal SourceType = "internal"
)

// Source is where an interface's messages come from. The field matching Type
// is set; all are nil for SourceInternal.
type Source struct {
	Type     SourceType
	MLLP     *MLLPSource
	HTTP     *HTTPSource
	File     *FileSource
	Schedule *ScheduleSource
}

// MLLPSource is an MLLP listener.
type MLLPSource struct {
	Listen          string
	MaxMessageBytes int64
	IdleTimeout     time.Duration // close a connection idle this long between messages
	ReadTimeout     time.Duration // the most one message may take to arrive once begun
}

// HTTPSource is a queued HTTP endpoint: POST → 202 after commit.
type HTTPSource struct {
	Listen       string
	Path         string
	MaxBodyBytes int64
}

// Split says whether a file is one message or many.
type Split string

// Split modes.
const (
	SplitNone    Split = "none"
	SplitRecords Split = "records"
)

// After says what happens to a file once all of it is committed.
type After string

// After modes.
const (
	AfterMove   After = "move"
	AfterDelete After = "delete"
)

// FileSource watches a local folder.
type FileSource struct {
	Path    string // absolute folder
	Pattern string // filepath.Match pattern on the file name
	Poll    time.Duration
	Split   Split
	After   After
	MoveTo  string // absolute folder; "" unless After is AfterMove
	// MaxFileBytes caps files read whole (SplitNone); 0 with SplitRecords,
	// which streams.
	MaxFileBytes int64
}

// DestinationType is a kind of destination.
type DestinationType string

// Destination types.
const (
	DestMLLP DestinationType = "mllp"
	DestHTTP DestinationType = "http"
	DestFile DestinationType = "file"
	// DestInterface routes to another interface (whose source is internal).
	DestInterface DestinationType = "interface"
)

// Destination is one named output of an interface. The field matching Type
// is set.
type Destination struct {
	Name      string
	Interface string // the interface it belongs to
	Type      DestinationType
	Transform string // the JavaScript function's name
	Format    Format // what the transform's output is serialised as
	Retry     Retry
	RateLimit *RateLimit // nil when unlimited
	// SaveOutput keeps the transform's output with the delivery.
	SaveOutput bool
	// Charset is the character set the output is sent in; nil sends it
	// in the set the message arrived in. JSON output is always UTF-8.
	Charset *charset.Charset
	MLLP    *MLLPDestination
	HTTP    *HTTPDestination
	File    *FileDestination
	Route   *Route
	// Line is where the destination is declared in its interface.yaml.
	Line int
}

// ActorID is the ID of the lane actor (type ductus.lane) that owns the
// destination's queue for a lane: "<interface>/<destination>/<lane>".
func (d *Destination) ActorID(lane int) string {
	return fmt.Sprintf("%s/%s/%d", d.Interface, d.Name, lane)
}

// Retry is the back-off for transient failures: Initial doubling up to Max.
type Retry struct {
	Initial     time.Duration
	Max         time.Duration
	MaxAttempts int // 0 = retry forever; after that many attempts, quarantine
}

// RateLimit is a token bucket.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// MLLPDestination sends over MLLP and waits for the ACK.
type MLLPDestination struct {
	Connection string // the resources.yaml name it came from, "" when inline
	Host       string
	Port       int
	AckTimeout time.Duration
	// KeepAlive sends every message on one kept-open connection (the
	// default); false opens a connection per message and closes it after
	// the ACK, for receivers that handle one message per connection.
	KeepAlive bool
	// Connections is how many connections the destination's lanes share
	// (default 1: many receivers take one connection per sender). Each
	// lane still sends one message at a time, so its order is kept; more
	// connections let lanes send at the same time.
	Connections int
}

// MaxMLLPConnections bounds an MLLP destination's connections.
const MaxMLLPConnections = 16

// HTTPDestination sends an HTTP request per message.
type HTTPDestination struct {
	Connection string // the resources.yaml name it came from, "" when inline
	URL        string // complete: a connection's URL with the destination's path
	Method     string
	Headers    map[string]string // the connection's, overridden by the destination's
	Timeout    time.Duration
}

// Route sends to another interface.
type Route struct {
	Interface string
}

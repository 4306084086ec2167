package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	env := func(m map[string]string) func(string) string {
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    config
		wantErr string
	}{
		{name: "defaults", want: config{dsn: defaultDSN, duration: 30 * time.Second, warmup: 5 * time.Second}},
		{
			name: "env DSN when no flag",
			env:  map[string]string{"DUCTUS_TEST_POSTGRES": "postgres://u@h:1/d"},
			want: config{dsn: "postgres://u@h:1/d", duration: 30 * time.Second, warmup: 5 * time.Second},
		},
		{
			name: "flag DSN beats env",
			args: []string{"-dsn", "postgres://flag@h/d"},
			env:  map[string]string{"DUCTUS_TEST_POSTGRES": "postgres://env@h/d"},
			want: config{dsn: "postgres://flag@h/d", duration: 30 * time.Second, warmup: 5 * time.Second},
		},
		{
			name: "smoke overrides duration and warm-up",
			args: []string{"-smoke", "-duration", "1m"},
			want: config{dsn: defaultDSN, duration: 2 * time.Second, warmup: 500 * time.Millisecond},
		},
		{
			name: "explicit settings",
			args: []string{"-duration", "10s", "-warmup", "0s", "-max-conns", "8", "-commit", "abc"},
			want: config{dsn: defaultDSN, duration: 10 * time.Second, maxConns: 8, commit: "abc"},
		},
		{name: "zero duration", args: []string{"-duration", "0s"}, wantErr: "-duration must be positive"},
		{name: "negative warm-up", args: []string{"-warmup", "-1s"}, wantErr: "-warmup must not be negative"},
		{name: "negative pool size", args: []string{"-max-conns", "-1"}, wantErr: "-max-conns must be between"},
		{name: "malformed duration", args: []string{"-duration", "soon"}, wantErr: "parse flags"},
		{name: "unknown flag", args: []string{"-workers", "10"}, wantErr: "parse flags"},
		{name: "stray argument", args: []string{"bench"}, wantErr: `unexpected argument "bench"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFlags(tt.args, env(tt.env), io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tt.want {
				t.Fatalf("config = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNewLine(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	tests := []struct {
		name      string
		res       result
		wantValue float64
	}{
		{name: "rate over the window", res: result{worked: 30_001, elapsed: 3 * time.Second}, wantValue: 10000.3},
		{name: "empty window", res: result{}, wantValue: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLine(tt.res, "sha", now)
			if l.Value != tt.wantValue || l.Ops != tt.res.worked {
				t.Fatalf("value, ops = %v, %d; want %v, %d", l.Value, l.Ops, tt.wantValue, tt.res.worked)
			}
			if l.Date != "2026-01-02T02:04:05Z" {
				t.Fatalf("date = %q, want UTC RFC3339", l.Date)
			}
			if l.Backend != "postgres" || l.Scenario != "peer_river_continuous" || l.Unit != "jobs/s" ||
				l.Durability != "normal" || l.Commit != "sha" || l.Peer != peerName {
				t.Fatalf("fixed fields wrong: %+v", l)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var createdRE = regexp.MustCompile(`msg="database created" name=(` + dbPrefix + `[0-9a-f]+)`)

// databaseExists reports whether the named database is on the server.
func databaseExists(t *testing.T, dsn, name string) bool {
	t.Helper()
	conn, err := connectAdmin(context.Background(), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatalf("query pg_database: %v", err)
	}
	return n > 0
}

// TestRunAgainstPostgres runs the real peer briefly against the real server:
// once to the end and once interrupted mid-measurement. Both must leave no
// database behind; the full run must print exactly one valid line.
func TestRunAgainstPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs River against PostgreSQL for several seconds")
	}
	dsn := os.Getenv("DUCTUS_TEST_POSTGRES")
	if dsn == "" {
		dsn = defaultDSN
	}
	tests := []struct {
		name        string
		interruptAt time.Duration // 0: run to the end
		wantErr     string
	}{
		{name: "full run"},
		{name: "interrupted", interruptAt: 2500 * time.Millisecond, wantErr: "interrupted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs syncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.interruptAt > 0 {
				time.AfterFunc(tt.interruptAt, cancel)
			}
			var out bytes.Buffer
			err := run(ctx, config{dsn: dsn, duration: 1500 * time.Millisecond, warmup: 200 * time.Millisecond, commit: "test"}, &out, logger)

			m := createdRE.FindStringSubmatch(logs.String())
			if m == nil {
				t.Fatalf("no database was created (err %v); logs:\n%s", err, logs.String())
			}
			if databaseExists(t, dsn, m[1]) {
				t.Fatalf("database %s still exists after the run", m[1])
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if out.Len() != 0 {
					t.Fatalf("an interrupted run printed %q", out.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v\nlogs:\n%s", err, logs.String())
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != 1 {
				t.Fatalf("stdout has %d lines, want 1: %q", len(lines), out.String())
			}
			var l line
			dec := json.NewDecoder(strings.NewReader(lines[0]))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&l); err != nil {
				t.Fatalf("decode %q: %v", lines[0], err)
			}
			if l.Ops <= 0 || l.Value <= 0 {
				t.Fatalf("no jobs worked: %+v", l)
			}
			if _, err := time.Parse(time.RFC3339, l.Date); err != nil {
				t.Fatalf("date %q: %v", l.Date, err)
			}
		})
	}
}

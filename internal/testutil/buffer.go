package testutil

import (
	"bytes"
	"strings"
	"sync"
)

// SyncBuffer is a bytes.Buffer that goroutines may write to while a test
// reads it: the output of a command or a logger under test.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Count returns how many times s occurs in what was written so far (log
// lines of one kind, say).
func (b *SyncBuffer) Count(s string) int { return strings.Count(b.String(), s) }

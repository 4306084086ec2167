// Package tools holds what the two test tools in the ductus binary share.
// The tools themselves live in its subpackages: send (ductus send, an MLLP
// sender of files or generated ADT/ORU messages) and sink (ductus sink, an
// MLLP receiver that acknowledges, counts, prints and records). They are
// separate from the engine because an integration team runs them against
// any MLLP peer, the engine or not, and the engine's end-to-end tests use
// them as the real peers on both sides of a feed.
package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Codes counts acknowledgements by code. The zero value is ready; it is
// safe for concurrent use.
type Codes struct {
	AA, AE, AR, CA, CE, CR atomic.Uint64
}

// Add counts one acknowledgement; an unknown code is ignored and reported
// false.
func (c *Codes) Add(code string) bool {
	switch code {
	case "AA":
		c.AA.Add(1)
	case "AE":
		c.AE.Add(1)
	case "AR":
		c.AR.Add(1)
	case "CA":
		c.CA.Add(1)
	case "CE":
		c.CE.Add(1)
	case "CR":
		c.CR.Add(1)
	default:
		return false
	}
	return true
}

// Snapshot copies the counts.
func (c *Codes) Snapshot() CodeCounts {
	return CodeCounts{AA: c.AA.Load(), AE: c.AE.Load(), AR: c.AR.Load(), CA: c.CA.Load(), CE: c.CE.Load(), CR: c.CR.Load()}
}

// CodeCounts is a copy of Codes.
type CodeCounts struct {
	AA, AE, AR, CA, CE, CR uint64
}

// Total is the number of acknowledgements counted.
func (c CodeCounts) Total() uint64 { return c.AA + c.AE + c.AR + c.CA + c.CE + c.CR }

// Accepted is the number of AA and CA.
func (c CodeCounts) Accepted() uint64 { return c.AA + c.CA }

// Get returns the count of one code.
func (c CodeCounts) Get(code string) uint64 {
	switch code {
	case "AA":
		return c.AA
	case "AE":
		return c.AE
	case "AR":
		return c.AR
	case "CA":
		return c.CA
	case "CE":
		return c.CE
	case "CR":
		return c.CR
	}
	return 0
}

// String lists every code with its count, "AA 3  AE 0  ...", in table 0008's
// order, so that summaries line up from run to run.
func (c CodeCounts) String() string {
	var parts []string
	for _, code := range []string{"AA", "AE", "AR", "CA", "CE", "CR"} {
		parts = append(parts, fmt.Sprintf("%s %d", code, c.Get(code)))
	}
	return strings.Join(parts, "  ")
}

// Short lists only the codes seen, "AA 3, AE 1", for a progress line.
func (c CodeCounts) Short() string {
	var parts []string
	for _, code := range []string{"AA", "AE", "AR", "CA", "CE", "CR"} {
		if n := c.Get(code); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", code, n))
		}
	}
	if len(parts) == 0 {
		return "no ACKs"
	}
	return strings.Join(parts, ", ")
}

// Percentile returns the p-th percentile (0 < p <= 100) of durations by
// the nearest-rank method; it sorts d in place. Zero for no durations.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	rank := int(p/100*float64(len(d))+0.999999999) - 1
	return d[min(max(rank, 0), len(d)-1)]
}

// Every calls fn every interval until ctx ends, and returns a function
// that stops it and waits for a call in progress. An interval <= 0 never
// calls fn.
func Every(ctx context.Context, interval time.Duration, fn func()) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// Rate returns n per second over elapsed, 0 for no time.
func Rate(n uint64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(n) / elapsed.Seconds()
}

package config

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// namePattern is what interface, destination and connection names must match:
// they become parts of actor IDs ("<interface>/<destination>/<lane>"), URLs
// and file names, so they are kept to one safe, lower-case alphabet.
var namePattern = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// checkName returns a message when name is not a valid name, "" when it is.
func checkName(name string) string {
	if namePattern.MatchString(name) {
		return ""
	}
	return fmt.Sprintf("name %q: want 1 to 64 characters of a-z, 0-9, _ and -", name)
}

// didYouMean suggests the closest of candidates to got, formatted as
// ` (did you mean "x"?)`, or "" when none is close.
func didYouMean(got string, candidates []string) string {
	best, bestD := "", -1
	lg := strings.ToLower(got)
	for _, c := range candidates {
		d := editDistance(lg, strings.ToLower(c))
		if d == 0 && c != got {
			return fmt.Sprintf(" (did you mean %q?)", c)
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	// Allow one edit per three letters, at least one: close enough to be a
	// typo, far enough not to suggest nonsense for short words.
	limit := max(1, len(got)/3)
	if best == "" || bestD > limit {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Damerau-Levenshtein (optimal string alignment) distance,
// so a swapped pair of letters counts as one typo.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// duration reads an optional Go duration ("5s", "1h30m") of at least min.
func (o *obj) duration(key string, def, min time.Duration) time.Duration {
	t, ok := o.scalar(key)
	if !ok {
		return def
	}
	v, err := time.ParseDuration(strings.TrimSpace(t.value))
	if err != nil {
		o.problem(key, "want a duration like %s, got %s", exampleDuration(def), t.shown)
		return def
	}
	if v < min {
		o.problem(key, "want a duration of at least %s, got %s", min, v)
		return def
	}
	return v
}

func exampleDuration(def time.Duration) string {
	if def <= 0 {
		return "30s"
	}
	return shortDuration(def)
}

// shortDuration prints d the way people write it: 5m rather than 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

var sizePattern = regexp.MustCompile(`^([0-9]+)\s*([A-Za-z]*)$`)

var sizeUnits = map[string]int64{
	"":    1,
	"b":   1,
	"kb":  1000,
	"mb":  1000 * 1000,
	"gb":  1000 * 1000 * 1000,
	"kib": 1 << 10,
	"mib": 1 << 20,
	"gib": 1 << 30,
}

// parseSize reads "1MiB", "256KB", "512 kib" or a plain number of bytes.
func parseSize(s string) (int64, error) {
	m := sizePattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("not a size")
	}
	unit, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q", m[2])
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n > (1<<62)/unit {
		return 0, fmt.Errorf("too large")
	}
	return n * unit, nil
}

// size reads an optional size of at least 1 byte.
func (o *obj) size(key string, def int64) int64 {
	t, ok := o.scalar(key)
	if !ok {
		return def
	}
	v, err := parseSize(t.value)
	if err != nil {
		o.problem(key, "want a size like 1MiB, 256KB or a number of bytes, got %s", t.shown)
		return def
	}
	if v < 1 {
		o.problem(key, "want a size of at least 1 byte, got %s", t.shown)
		return def
	}
	return v
}

// listenAddr is a parsed listen address: host (as written, "" for every
// address) and port.
type listenAddr struct {
	host string
	port int
}

// parseListen checks a "host:port" listen address. Port 0 (the system picks
// a free port) is allowed for tests.
func parseListen(s string) (listenAddr, string) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return listenAddr{}, fmt.Sprintf("want host:port such as 127.0.0.1:2575 or :2575, got %q", s)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return listenAddr{}, fmt.Sprintf("want a port from 0 to 65535 in %q", s)
	}
	if strings.ContainsAny(host, " /") {
		return listenAddr{}, fmt.Sprintf("bad host in %q", s)
	}
	return listenAddr{host: host, port: p}, ""
}

// wildcard reports whether the host listens on every address.
func (a listenAddr) wildcard() bool {
	return a.host == "" || a.host == "0.0.0.0" || a.host == "::" || a.host == "[::]"
}

// normHost makes the spellings of loopback compare equal.
func (a listenAddr) normHost() string {
	switch strings.ToLower(a.host) {
	case "localhost", "127.0.0.1":
		return "127.0.0.1"
	}
	return strings.ToLower(a.host)
}

// clashes reports whether two listeners would fight over a port.
func (a listenAddr) clashes(b listenAddr) bool {
	if a.port == 0 || b.port == 0 || a.port != b.port {
		return false
	}
	return a.wildcard() || b.wildcard() || a.normHost() == b.normHost()
}

// loopback reports whether the address is reachable only from this machine.
func (a listenAddr) loopback() bool {
	if strings.EqualFold(a.host, "localhost") {
		return true
	}
	ip := net.ParseIP(a.host)
	return ip != nil && ip.IsLoopback()
}

// hostPort checks an outbound host name and port.
func checkHost(h string) string {
	if h == "" || strings.ContainsAny(h, " /:@") && net.ParseIP(h) == nil {
		return fmt.Sprintf("want a host name or IP address, got %q", h)
	}
	return ""
}

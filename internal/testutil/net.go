package testutil

import (
	"net"
	"testing"
)

// FreePort returns a loopback address ("127.0.0.1:port") that nothing
// listened on a moment ago, for a server the test starts on it itself
// (a listener on :0 would not tell the test where to point a client
// before the server runs).
func FreePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

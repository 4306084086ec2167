package testutil

import (
	"net"
	"sync"
	"testing"
)

// handedOut holds every address FreePort has returned in this test
// process: the kernel may give the same ephemeral port to two listeners
// opened and closed in a row, and a test that asks for several ports
// before it starts its servers needs them distinct.
var handedOut struct {
	sync.Mutex
	addrs map[string]bool
}

// FreePort returns a loopback address ("127.0.0.1:port") that nothing
// listened on a moment ago and that FreePort has not returned before in
// this process, for a server the test starts on it itself (a listener on
// :0 would not tell the test where to point a client before the server
// runs).
func FreePort(t testing.TB) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.addrs == nil {
		handedOut.addrs = map[string]bool{}
	}
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
	t.Fatal("find a free port: the kernel kept offering ports already handed out")
	return ""
}

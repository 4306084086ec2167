//go:build !unix

package mllpnet

import "net"

// peerClosed cannot peek at a socket on this platform: a connection the
// peer closed is found by the exchange instead.
func peerClosed(net.Conn) bool { return false }

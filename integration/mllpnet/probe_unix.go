//go:build unix

package mllpnet

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed reports whether the peer has closed conn (or sent bytes
// nobody asked for) while it sat idle, without blocking and without
// consuming anything: a non-blocking MSG_PEEK on the socket. A read with
// an expired deadline cannot do this, since Go reports the timeout before
// it tries the read. Connections that are not sockets (TLS, say) report
// false, and a dead one is found by the exchange instead.
func peerClosed(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		// Any answer but "nothing waiting" rules the connection out: 0
		// bytes is the peer's FIN, more are bytes nobody asked for, an
		// error is a reset or worse.
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR)
		return true // never wait for readiness
	})
	return closed || err != nil
}

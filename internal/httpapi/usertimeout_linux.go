package httpapi

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setUserTimeout has the kernel abort c once data it sent has gone
// unacknowledged for d (TCP_USER_TIMEOUT). A client that vanished without
// a FIN acknowledges nothing: a quiet stream's keepalives never fill the
// send buffer, so the write deadline alone would wait for the kernel's
// retransmissions to give up, about 15 minutes; with this the next
// keepalive after d fails.
func setUserTimeout(c net.Conn, d time.Duration) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
}

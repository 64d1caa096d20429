//go:build !linux

package httpapi

import (
	"net"
	"time"
)

// setUserTimeout is Linux's TCP_USER_TIMEOUT; elsewhere a vanished client
// on a quiet stream is found when the kernel's retransmissions give up.
func setUserTimeout(net.Conn, time.Duration) {}

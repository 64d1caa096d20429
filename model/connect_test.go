package model_test

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"meka.dev/meka/model"
)

// fullListener is a loopback socket that accepts nothing and whose
// backlog is full, so a new connection hangs in the handshake as it does
// to a host that drops packets.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	l, err := net.FileListener(os.NewFile(uintptr(fd), "full"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	addr := l.Addr().String()
	// Fill the queue: a backlog of 0 holds one connection (or two).
	for range 3 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { c.Close() })
	}
	return addr
}

func TestConnectTimeoutNamesTheWait(t *testing.T) {
	addr := fullListener(t)
	hc := model.HTTPClient(100 * time.Millisecond)
	res, err := hc.Get("http://" + addr + "/")
	if err == nil {
		res.Body.Close()
		t.Fatal("connected to a full listener")
	}
	var te *model.TimeoutError
	if !errors.As(err, &te) || te.Wait != "connect_timeout" || !model.IsConnError(err) {
		t.Fatalf("err = %v, want a connection error naming connect_timeout", err)
	}
}

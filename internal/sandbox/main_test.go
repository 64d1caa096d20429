//go:build linux

package sandbox

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == attackMarker {
		runAttack(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == hideMarker {
		runHide()
	}
	if len(os.Args) > 2 && os.Args[1] == holderMarker {
		runHolder(os.Args[2])
	}
	os.Exit(m.Run())
}

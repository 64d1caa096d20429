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
	if len(os.Args) > 3 && os.Args[1] == launchHolderMarker {
		runLaunchHolder(os.Args[2], os.Args[3])
	}
	if len(os.Args) > 2 && os.Args[1] == holderMarker {
		runHolder(os.Args[2])
	}
	// As meka's main does (after HideEnv, which runHide tests): every
	// confined command of these tests starts from an undumpable parent,
	// and the attack suite's /proc/<meka> rows aim at this process.
	if err := Undumpable(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

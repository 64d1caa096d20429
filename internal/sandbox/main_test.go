//go:build linux

package sandbox

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	RunHelperIfRequested()
	os.Exit(m.Run())
}

// Package testenv is what meka's tests share about the machine they run
// on. A test that needs a tool or facility the machine lacks (a
// confinement backend, git, a pseudo-terminal) skips on a developer's
// machine and fails under CI (MEKA_CI set, as .ci/run does), so CI never
// passes by silently testing less.
//
// Only tests import it; it imports nothing from meka.
package testenv

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// EnvCI is the variable .ci/run sets: under it nothing may skip for a
// missing tool.
const EnvCI = "MEKA_CI"

// CI reports whether the tests run under CI.
func CI() bool { return os.Getenv(EnvCI) != "" }

// Skip skips t saying what is missing, or under CI fails it, since there
// the missing tool is a broken runner, not a reason to test less.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf(EnvCI+" is set, so this test may not skip: "+format, args...)
	}
	t.Skipf(format, args...)
}

// EnvSeed replays a randomised test: set it to the seed a failing run
// logged.
const EnvSeed = "MEKA_TEST_SEED"

// Seed returns the seed of a randomised test: EnvSeed when set, a fresh
// one otherwise. It logs the seed and how to replay it, so a failure can
// be run again exactly.
func Seed(t testing.TB) uint64 {
	t.Helper()
	if s := os.Getenv(EnvSeed); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer", EnvSeed, s)
		}
		t.Logf("seed %d, from %s", seed, EnvSeed)
		return seed
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d; replay with %s=%d go test -run '^%s$'", seed, EnvSeed, seed, t.Name())
	return seed
}

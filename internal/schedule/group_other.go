//go:build !unix

package schedule

import "os/exec"

// setGroup leaves cmd as it is: without process groups a cancel kills
// the shell only.
func setGroup(*exec.Cmd) {}

package sandbox

import "meka.dev/meka/internal/sandbox/helper"

// landlockABI returns the kernel's Landlock ABI version, 0 without one.
func landlockABI() int { return helper.ABI() }

// LandlockABI returns the kernel's Landlock ABI version, 0 without one.
func LandlockABI() int { return landlockABI() }

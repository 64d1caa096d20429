package schedule

import (
	"strings"
	"testing"
	"time"
)

// A recurring job stored with no interval (a row written wrong) has no
// next occurrence and stands for one missed, instead of dividing by zero.
func TestZeroIntervalJob(t *testing.T) {
	at := time.Date(2026, 8, 11, 13, 0, 0, 0, time.UTC)
	j := Job{ID: "0123456789abcdef", Kind: KindEvery, NextAt: at}
	if _, err := nextAfter(j, at); err == nil || !strings.Contains(err.Error(), "interval 0s is not positive") {
		t.Errorf("nextAfter = %v", err)
	}
	if n, capped := occurrences(j, at.Add(time.Hour)); n != 1 || capped {
		t.Errorf("occurrences = %d, %v; want 1, false", n, capped)
	}
}

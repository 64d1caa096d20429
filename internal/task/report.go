package task

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultReportOutput is the tail of each task's output a report carries
// when Report is given no bound.
const DefaultReportOutput = 4 << 10

// StageDirection is the line people see when a task's report is
// delivered: "Background task 7f3a1c22 finished after 12m 4s".
func StageDirection(t Task) string {
	return fmt.Sprintf("Background task %s finished after %s", t.ID, FormatDuration(t.Ended.Sub(t.Started)))
}

// FormatDuration writes d the way people say it: "45s", "12m 4s",
// "1h 2m"; seconds are dropped from an hour on, and a zero last unit is
// left out ("12m", "2h").
func FormatDuration(d time.Duration) string {
	d = d.Truncate(time.Second)
	if d < 0 {
		d = 0
	}
	h, m, s := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0 && m > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case h > 0:
		return fmt.Sprintf("%dh", h)
	case m > 0 && s > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	case m > 0:
		return fmt.Sprintf("%dm", m)
	}
	return fmt.Sprintf("%ds", s)
}

// Report is the text the model reads about tasks that ended: for each, its
// id, label, command, outcome, duration and the last maxOutput bytes of
// its output (DefaultReportOutput when maxOutput <= 0), with the path of
// the whole output when that was cut.
func Report(tasks []Task, maxOutput int) string {
	if maxOutput <= 0 {
		maxOutput = DefaultReportOutput
	}
	var b strings.Builder
	for i, t := range tasks {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s: %s.\n", StageDirection(t), t.Outcome())
		if t.Label != "" && t.Label != t.Command {
			fmt.Fprintf(&b, "Label: %s\n", t.Label)
		}
		fmt.Fprintf(&b, "Command: %s\n", t.Command)
		tail, size, err := readTail(t.Output, maxOutput)
		switch {
		case err != nil:
			fmt.Fprintf(&b, "Output: unavailable (%v).\n", err)
		case size == 0:
			b.WriteString("Output: none.\n")
		case int64(len(tail)) < size:
			fmt.Fprintf(&b, "Output (the last %s of %s; the whole output is in %s):\n%s",
				FormatSize(int64(len(tail))), FormatSize(size), t.Output, tail)
		default:
			fmt.Fprintf(&b, "Output:\n%s", tail)
		}
		if size > 0 && err == nil && !strings.HasSuffix(tail, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// readTail returns at most limit bytes from the end of the file at path,
// starting at a line boundary when one is near, as valid UTF-8.
func readTail(path string, limit int) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	size := fi.Size()
	off := max(0, size-int64(limit))
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return "", 0, err
	}
	if off > 0 {
		// Start at the next whole line, unless that throws away too much.
		if i := strings.IndexByte(string(buf), '\n'); i >= 0 && i < len(buf)/4 {
			buf = buf[i+1:]
		}
		for len(buf) > 0 && !utf8.RuneStart(buf[0]) {
			buf = buf[1:]
		}
	}
	return strings.ToValidUTF8(string(buf), "\uFFFD"), size, nil
}

// FormatSize writes n bytes as "512 B", "4.0 KiB", "1.2 MiB".
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Tail returns at most limit bytes from the end of task id's output
// (readTail's cut), and the output's whole size.
func (r *Registry) Tail(id string, limit int) (string, int64, error) {
	t, ok := r.Get(id)
	if !ok {
		return "", 0, fmt.Errorf("read task %s: %w", id, ErrUnknown)
	}
	return readTail(t.Output, limit)
}

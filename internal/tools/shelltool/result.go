package shelltool

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"meka.dev/meka/internal/task"
	"meka.dev/meka/model"
	"meka.dev/meka/tool"
)

// signalName names the signal that ended a process, "" if none did.
func signalName(sig syscall.Signal) string {
	if sig == 0 {
		return ""
	}
	return sysSignalName(sig)
}

// result is what the model reads: how the command ended, then stdout and
// stderr in sections of their own, each cut to its share of HeadBytes
// with the whole in the scratchpad.
func (t *Tool) result(timeout time.Duration, st State, stdout, stderr *stream) tool.Result {
	var b strings.Builder
	res := tool.Result{}
	switch {
	case st.Canceled:
		b.WriteString("Canceled: the command and every process it started were killed.")
		res.IsError = true
	case st.TimedOut:
		fmt.Fprintf(&b, "Timed out after %s: the command and every process it started were killed. Set a longer timeout, or background: true for work that takes long.", task.FormatDuration(timeout))
		res.IsError = true
	case st.Signal != "":
		fmt.Fprintf(&b, "Terminated by signal %s.", st.Signal)
	default:
		fmt.Fprintf(&b, "Exit code %d.", st.ExitCode)
	}
	b.WriteString("\n")

	budget := t.opts.HeadBytes
	errShare := min(len(stderr.head), max(budget/2, budget-len(stdout.head)))
	outShare := min(len(stdout.head), budget-errShare)
	st.Stdout = section(&b, stdout, outShare)
	st.Stderr = section(&b, stderr, errShare)

	res.Content = []model.Part{model.Text{Text: b.String()}}
	res.State, _ = json.Marshal(st)
	return res
}

// section writes s within share bytes and says where the rest is.
func section(b *strings.Builder, s *stream, share int) *StreamState {
	ss := &StreamState{Bytes: s.total}
	if s.total == 0 {
		fmt.Fprintf(b, "<%s></%s>\n", s.name, s.name)
		return ss
	}
	shown := string(s.head)
	cut := !s.whole() || len(shown) > share
	if cut {
		shown = cutAtLine(shown, share)
	}
	shown = strings.ToValidUTF8(shown, "\uFFFD")
	fmt.Fprintf(b, "<%s>\n%s", s.name, shown)
	if shown != "" && !strings.HasSuffix(shown, "\n") {
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "</%s>\n", s.name)
	if !cut {
		return ss
	}
	path, err := s.keep()
	ss.Scratch = path
	of := fmt.Sprintf("[%s cut at %s of %s", s.name, task.FormatSize(int64(len(shown))), task.FormatSize(s.total))
	switch {
	case path != "" && err == nil:
		fmt.Fprintf(b, "%s. The whole %s is in the scratchpad file %s: read it with file_read (line, limit or pattern).]\n", of, s.name, path)
	case path != "" && errors.Is(err, errSpillFull):
		fmt.Fprintf(b, "%s. The scratchpad file %s holds its first %s: read it with file_read (line, limit or pattern).]\n", of, path, task.FormatSize(s.spilled))
	case path != "":
		fmt.Fprintf(b, "%s. The scratchpad file %s holds part of it (%v).]\n", of, path, err)
	default:
		fmt.Fprintf(b, "%s; the rest was not kept: %v.]\n", of, err)
	}
	return ss
}

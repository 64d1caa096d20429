package lsp

import (
	"fmt"
	"slices"
	"strings"
)

// maxMessageBytes bounds one diagnostic's message.
const maxMessageBytes = 500

// Format is the report as the model reads it after a change to the file
// named name: the errors first, then the warnings, at most MaxDiagnostics
// of them and MaxTextBytes in all, with how many were left out. It is ""
// when no server serves the file.
func (r Report) Format(name string) string {
	if r.Server == "" {
		return ""
	}
	if !r.Fresh {
		if r.Note == "" {
			return "" // the caller gave up waiting
		}
		return "Diagnostics: " + r.Note + "."
	}
	if len(r.Diagnostics) == 0 {
		return fmt.Sprintf("Diagnostics (%s): no errors or warnings in %s.", r.Server, name)
	}
	diags := slices.Clone(r.Diagnostics)
	slices.SortStableFunc(diags, func(a, b Diagnostic) int { return int(a.Severity) - int(b.Severity) })
	var errs, warns int
	for _, d := range diags {
		if d.Severity == SeverityWarning {
			warns++
		} else {
			errs++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Diagnostics (%s) in %s: %s.", r.Server, name, count(errs, warns))
	shown := 0
	for _, d := range diags {
		line := fmt.Sprintf("\n%s:%d:%d: %s: %s", name, d.Line, d.Column, d.Severity, oneLine(d.Message))
		if d.Source != "" {
			line += " (" + oneLine(d.Source) + ")"
		}
		if shown == MaxDiagnostics || b.Len()+len(line) > MaxTextBytes-40 {
			break
		}
		b.WriteString(line)
		shown++
	}
	if left := len(diags) - shown; left > 0 {
		fmt.Fprintf(&b, "\n(%d more not shown)", left)
	}
	return b.String()
}

func count(errs, warns int) string {
	var parts []string
	if errs > 0 {
		parts = append(parts, plural(errs, "error"))
	}
	if warns > 0 {
		parts = append(parts, plural(warns, "warning"))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// oneLine folds a message onto one line and bounds it.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxMessageBytes {
		cut := maxMessageBytes
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut-- // not inside a UTF-8 sequence
		}
		s = s[:cut] + "…"
	}
	return s
}

package config

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Error is a problem with a config file, placed at the key it is about:
// a TOML syntax error, a value of the wrong type, an unknown key, or a value
// that decoded fine but means nothing (an unknown level, a bad duration).
type Error struct {
	File string
	// Line and Column are 1-based; 0 when unknown.
	Line, Column int
	// Key is the dotted key, e.g. profiles.local.model; empty for a syntax
	// error outside any key.
	Key string
	Msg string
	// Err is the underlying error, if any, e.g. a *DurationError or one
	// wrapping permission.ErrUnknownLevel.
	Err error
}

// Error reads like: config.toml:12: key "profiles.local.modle": unknown key.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(':')
		} else {
			b.WriteString("line ")
		}
		b.WriteString(strconv.Itoa(e.Line))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// formatKey writes a key path the way TOML would: parts joined by dots,
// quoted when they are not bare keys. It is unambiguous, so it also keys
// the position index.
func formatKey(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		if isBareKey(p) {
			b.WriteString(p)
		} else {
			b.WriteString(strconv.Quote(p))
		}
	}
	return b.String()
}

func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// decodeError turns what go-toml returns into an *Error, rewording type
// mismatches (which name Go types) in terms of the schema.
func decodeError(file string, err error, idx *keyIndex) *Error {
	var strictErr *toml.StrictMissingError
	if errors.As(err, &strictErr) && len(strictErr.Errors) > 0 {
		// Our own schema pass normally catches these first; keep go-toml's
		// verdict as the backstop, earliest key first.
		errs := sortedByPosition(strictErr.Errors)
		de := &errs[0]
		line, col := de.Position()
		return &Error{File: file, Line: line, Column: col, Key: formatKey(de.Key()), Msg: "unknown key"}
	}
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return &Error{File: file, Msg: err.Error(), Err: err}
	}
	line, col := de.Position()
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	key := []string(de.Key())
	if isTypeMismatch(msg) && len(key) > 0 {
		key, msg = typeMessage(key, idx)
		if e := idx.get(key); e != nil {
			line, col = e.at.line, e.at.col
		}
	}
	return &Error{File: file, Line: line, Column: col, Key: formatKey(key), Msg: msg}
}

func sortedByPosition(errs []toml.DecodeError) []toml.DecodeError {
	out := append([]toml.DecodeError(nil), errs...)
	sort.SliceStable(out, func(i, j int) bool {
		li, ci := out[i].Position()
		lj, cj := out[j].Position()
		return li < lj || li == lj && ci < cj
	})
	return out
}

func isTypeMismatch(msg string) bool {
	return strings.Contains(msg, "cannot decode TOML") || strings.Contains(msg, "cannot store") ||
		strings.Contains(msg, "cannot assign") || strings.Contains(msg, "cannot be stored")
}

// typeMessage says what the schema wants at key, and what the file has
// there when that is a different kind of thing. A key that runs on past a
// leaf (model.x = 1) is reported at the leaf, which the file made a table.
func typeMessage(key []string, idx *keyIndex) ([]string, string) {
	t, f, depth, unknown := walkSchema(reflect.TypeFor[fileConfig](), key)
	if unknown {
		return key, "unknown key"
	}
	got := ""
	if depth < len(key) {
		key, got = key[:depth], "a table"
	} else if e := idx.get(key); e != nil {
		got = kindName(e.kind)
	}
	want := describeType(t, f)
	msg := "want " + want
	if got != "" && !strings.HasPrefix(want, got) {
		msg += ", got " + got
	}
	return key, msg
}

func kindName(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Integer:
		return "an integer"
	case unstable.Float:
		return "a float"
	case unstable.Bool:
		return "a boolean"
	case unstable.Array:
		return "an array"
	case unstable.Table, unstable.InlineTable:
		return "a table"
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		return "a date or time"
	}
	return ""
}

// Package rowcodec encodes and decodes a session row's entry as the
// databases store it: the JSON session.EncodeEntry writes, written and
// read in fewer passes. internal/sqlite and internal/postgres share it, so
// both read a 2,000-row session in the same time and store the same bytes.
//
// It imports session and model only.
package rowcodec

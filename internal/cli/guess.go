package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// A prompt may be given unquoted (meka fix the build), so any word that is
// not a subcommand reaches the root command as the start of a prompt. A
// mistyped subcommand would then be sent to the model: it costs tokens and
// stores a session. refuseMistake catches the likely mistakes first.

// bareWords are single words people type expecting a command; each says
// what they probably meant.
var bareWords = map[string]string{
	"version":  "meka --version",
	"config":   "meka --config FILE (the keys are listed in docs/config.md)",
	"list":     "meka sessions list",
	"show":     "meka sessions show ID",
	"fork":     "meka sessions fork ID",
	"rewind":   "meka sessions rewind ID --turn N",
	"resume":   "meka -r ID",
	"continue": "meka -c",
	"jobs":     "meka schedule list",
}

// refuseMistake returns a usage error when args, the root command's
// positional arguments, look like a mistyped subcommand rather than a
// prompt: a lone word in bareWords, or a first word within two edits of a
// subcommand's name (one edit for names of up to four letters, whose
// two-edit neighbours are everyday words: hello, add). Words after -- are
// always a prompt.
func refuseMistake(root *cobra.Command, args []string, more []string) error {
	if len(args) == 0 || root.ArgsLenAtDash() == 0 {
		return nil
	}
	word := args[0]
	if strings.ContainsAny(word, " \t\n") {
		return nil // a quoted prompt
	}
	lower := strings.ToLower(word)
	if meant, ok := bareWords[lower]; ok && len(args) == 1 {
		return mistake(word, args, meant)
	}
	names := more
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() && c.Name() != "help" {
			continue
		}
		names = append(names, append([]string{c.Name()}, c.Aliases...)...)
	}
	best, bestDist := "", 3
	for _, name := range names {
		limit := 2
		if len(name) <= 4 {
			limit = 1
		}
		if d := editDistance(lower, name); d > 0 && d <= limit && d < bestDist {
			best, bestDist = name, d
		}
	}
	if best == "" {
		return nil
	}
	return mistake(word, args, "meka "+best)
}

func mistake(word string, args []string, meant string) error {
	return usageError("unknown command %q; did you mean %s?\nTo send it to the model as a prompt: meka -- %s",
		word, meant, strings.Join(args, " "))
}

// editDistance counts the insertions, deletions, substitutions and swaps
// of adjacent bytes that turn a into b (optimal string alignment), so
// "hlep" is one edit from "help". Inputs are single words, cut at 64 bytes.
func editDistance(a, b string) int {
	if len(a) > 64 {
		a = a[:64]
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/typo"
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
		if d := typo.Distance(lower, name); d > 0 && d <= limit && d < bestDist {
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

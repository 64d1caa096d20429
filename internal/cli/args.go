package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"meka.dev/meka/internal/typo"
)

// oneshotFirst reports whether args ask for --oneshot (or -p) before the
// first positional word: then every word is the prompt, even one that names
// a subcommand (meka --oneshot migrate sends "migrate").
func oneshotFirst(root *cobra.Command, args []string) bool {
	lookup := func(long string, short byte) *pflag.Flag {
		for _, fs := range []*pflag.FlagSet{root.Flags(), root.PersistentFlags()} {
			if long != "" {
				if f := fs.Lookup(long); f != nil {
					return f
				}
			} else if f := fs.ShorthandLookup(string(short)); f != nil {
				return f
			}
		}
		return nil
	}
	takesValue := func(f *pflag.Flag) bool { return f != nil && f.NoOptDefVal == "" }
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || !strings.HasPrefix(a, "-") || a == "-":
			return false
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			f := lookup(name, 0)
			if f != nil && f.Name == "oneshot" {
				return !hasValue || value != "false"
			}
			if !hasValue && takesValue(f) {
				i++ // its value
			}
		default:
			// A group of shorthands: -cp; a value-taking one ends it (-rID).
			for j := 1; j < len(a); j++ {
				f := lookup("", a[j])
				if f != nil && f.Name == "oneshot" {
					return true
				}
				if takesValue(f) {
					if j == len(a)-1 {
						i++
					}
					break
				}
			}
		}
	}
	return false
}

// promptOnly takes the subcommands off root, so that every positional
// word reaches it; refuseMistake still knows their names.
func promptOnly(root *cobra.Command, g *globals) {
	g.commandNames = nil
	for _, c := range root.Commands() {
		g.commandNames = append(g.commandNames, append([]string{c.Name()}, c.Aliases...)...)
	}
	root.RemoveCommand(root.Commands()...)
	root.CompletionOptions.DisableDefaultCmd = true
}

// refuseUnknownSubcommands makes each command group (sessions, schedule,
// ...) refuse a word that is none of its subcommands, with the nearest
// one, instead of printing its help and exiting 0.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
		if !sub.HasSubCommands() || sub.Runnable() {
			continue
		}
		sub.Args = cobra.ArbitraryArgs
		sub.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := nearestCommand(cmd, args[0]); s != "" {
				msg += fmt.Sprintf("; did you mean %s %s?", cmd.CommandPath(), s)
			}
			return usageError("%s\n%s --help lists its commands", msg, cmd.CommandPath())
		}
	}
}

// nearestCommand is c's subcommand within two edits of word (or
// starting with it), else "".
func nearestCommand(c *cobra.Command, word string) string {
	best, bestDist := "", 3
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() {
			continue
		}
		d := typo.Distance(strings.ToLower(word), sub.Name())
		if strings.HasPrefix(sub.Name(), strings.ToLower(word)) {
			d = 1
		}
		if d < bestDist {
			best, bestDist = sub.Name(), d
		}
	}
	return best
}

// flagError adds the nearest flag's name to pflag's "unknown flag".
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		var names []string
		visit := func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		}
		cmd.Flags().VisitAll(visit)
		cmd.InheritedFlags().VisitAll(visit)
		if best := typo.Nearest(name, names, 2); best != "" {
			return usageError("%s; did you mean --%s?", msg, best)
		}
	}
	return usageError("%s\n%s --help lists the flags", msg, cmd.CommandPath())
}

// Package sandbox owns the boundaries meka puts around the agent's work:
//
//   - Roots: the workspace's directories, canonical, with the checks that
//     keep a path inside them (no `..` or symlink escapes, read-only roots
//     refuse writes) and file operations that re-verify after opening, so
//     a symlink swapped in after the check cannot redirect them;
//   - the confined process runner: Command builds an *exec.Cmd that runs
//     read-only or writes only to given directories, under Landlock (by
//     re-executing the current binary as a helper, see package helper)
//     or bubblewrap, and refuses with
//     ErrNoConfinement rather than run unconfined while claiming a mode;
//   - launchers, which Launch (and so shell_execute and background tasks)
//     starts confined commands through: one helper per confinement, set
//     up once (namespaces, mounts, loopback), that starts each command
//     in a PID namespace, a mount namespace where only its own temp dir
//     is writable and, with Landlock, a Landlock domain of its own.
//     Commands confined alike share the launcher's network namespace (a
//     server one starts on 127.0.0.1 is reachable by the next) and its
//     /proc: under bubblewrap alone, without Landlock's ptrace scope, one
//     can read another's /proc files, a command with the same rights;
//   - the environment scrub that keeps credentials out of children;
//   - process groups, so that a cancel kills every process a command
//     started.
//
// It is a leaf package: it imports nothing from meka but its helper.
package sandbox

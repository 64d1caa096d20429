// Command meka runs an AI model as an agent in a workspace. Everything it
// does lives in internal/cli.
package main

import (
	"context"
	"os"

	"meka.dev/meka/internal/cli"
)

func main() {
	// Provider keys leave the environment before anything can start a
	// child; a failure only leaves them where they were.
	_ = cli.HideKeys(os.Args[1:])
	ctx, stop := cli.SignalContext(context.Background())
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

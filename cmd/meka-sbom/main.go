// Command meka-sbom writes a CycloneDX SBOM of a Go binary (package
// internal/sbom): meka-sbom [-o FILE] BINARY. The release runs it on each
// binary it builds (.goreleaser.yaml's sboms).
package main

import (
	"flag"
	"fmt"
	"os"

	"meka.dev/meka/internal/sbom"
)

func main() {
	out := flag.String("o", "", "write the document to `file` instead of stdout")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: meka-sbom [-o FILE] BINARY")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out); err != nil {
		fmt.Fprintln(os.Stderr, "meka-sbom:", err)
		os.Exit(1)
	}
}

func run(bin, out string) error {
	b, err := sbom.File(bin)
	if err != nil {
		return err
	}
	w := os.Stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if err := b.Write(w); err != nil {
		return err
	}
	if out != "" {
		return w.Close()
	}
	return nil
}

package sbom_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"runtime/debug"
	"testing"

	"meka.dev/meka/internal/sbom"
)

// A real binary (this test's own) is catalogued: its module, its digest.
func TestFileCataloguesABinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := sbom.File(exe)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	c := b.Metadata.Component
	if c.Name != "meka.dev/meka" || c.Type != "application" {
		t.Errorf("component = %+v, want the application meka.dev/meka", c)
	}
	if len(c.Hashes) != 1 || c.Hashes[0].Content != hex.EncodeToString(sum[:]) {
		t.Errorf("hashes = %+v, want the file's SHA-256 %x", c.Hashes, sum)
	}
	if b.BOMFormat != "CycloneDX" || b.SpecVersion != sbom.SpecVersion || b.Version != 1 {
		t.Errorf("header = %s %s %d", b.BOMFormat, b.SpecVersion, b.Version)
	}
}

func TestFileRefusesWhatIsNotAGoBinary(t *testing.T) {
	p := t.TempDir() + "/not-go"
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := sbom.File(p); err == nil {
		t.Fatal("a shell script was catalogued")
	}
}

// Every linked module is a component the binary depends on, by purl, with
// go.sum's hash as hex; a replacement stands for what it replaces; the
// same input gives the same bytes.
func TestFromBuildInfo(t *testing.T) {
	info := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "meka.dev/meka", Version: "v0.1.0"},
		Deps: []*debug.Module{
			{Path: "github.com/spf13/cobra", Version: "v1.10.2", Sum: "h1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="},
			{Path: "example.com/old", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/new", Version: "v2.0.0"}},
		},
		Settings: []debug.BuildSetting{{Key: "GOOS", Value: "darwin"}, {Key: "GOARCH", Value: "arm64"}, {Key: "-trimpath", Value: "true"}, {Key: "GOAMD64", Value: "v1"}},
	}
	digest := []byte{1, 2, 3}
	b := sbom.FromBuildInfo(info, digest)
	if got := b.Metadata.Component.PURL; got != "pkg:golang/meka.dev/meka@v0.1.0" {
		t.Errorf("main purl = %q", got)
	}
	props := map[string]string{}
	for _, p := range b.Metadata.Component.Properties {
		props[p.Name] = p.Value
	}
	if props["cdx:gomod:build:GOOS"] != "darwin" || props["cdx:gomod:build:-trimpath"] != "true" || props["cdx:gomod:build:env:GOVERSION"] != "go1.26.8" {
		t.Errorf("properties = %v", props)
	}
	if _, ok := props["cdx:gomod:build:GOAMD64"]; ok {
		t.Error("a setting outside the list was kept")
	}
	if len(b.Components) != 2 {
		t.Fatalf("components = %+v", b.Components)
	}
	cobra := b.Components[0]
	if cobra.PURL != "pkg:golang/github.com/spf13/cobra@v1.10.2" || len(cobra.Hashes) != 1 ||
		cobra.Hashes[0].Content != "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" {
		t.Errorf("cobra = %+v", cobra)
	}
	repl := b.Components[1]
	if repl.Name != "example.com/new" || repl.Version != "v2.0.0" || len(repl.Properties) != 1 || repl.Properties[0].Value != "example.com/old@v1.0.0" {
		t.Errorf("replacement = %+v", repl)
	}
	if len(b.Dependencies) != 1 || b.Dependencies[0].Ref != b.Metadata.Component.BOMRef || len(b.Dependencies[0].DependsOn) != 2 {
		t.Errorf("dependencies = %+v", b.Dependencies)
	}
	var one, two bytes.Buffer
	if err := b.Write(&one); err != nil {
		t.Fatal(err)
	}
	if err := sbom.FromBuildInfo(info, digest).Write(&two); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one.Bytes(), two.Bytes()) {
		t.Error("the same binary gave two documents")
	}
	var doc map[string]any
	if err := json.Unmarshal(one.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if s, _ := doc["serialNumber"].(string); len(s) != len("urn:uuid:")+36 || s[9+14] != '5' {
		t.Errorf("serialNumber = %q, want a version-5 UUID URN", s)
	}
}

// Package sbom writes a CycloneDX software bill of materials for a Go
// binary from the build information the Go toolchain stamped into it: the
// main module, every module linked in (with go.sum's hash) and the build
// settings. It reads binaries of any platform, so one host catalogues a
// release's six. The release (.goreleaser.yaml) runs it through
// cmd/meka-sbom, as syft would be run where it is installed.
//
// It imports nothing from meka.
package sbom

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// SpecVersion is the CycloneDX version of the documents written.
const SpecVersion = "1.5"

// BOM is a CycloneDX document, the fields written here.
type BOM struct {
	BOMFormat    string       `json:"bomFormat"`
	SpecVersion  string       `json:"specVersion"`
	SerialNumber string       `json:"serialNumber"`
	Version      int          `json:"version"`
	Metadata     Metadata     `json:"metadata"`
	Components   []Component  `json:"components"`
	Dependencies []Dependency `json:"dependencies"`
}

// Metadata names the tool and the binary catalogued.
type Metadata struct {
	Tools     Tools     `json:"tools"`
	Component Component `json:"component"`
}

// Tools lists what wrote the document.
type Tools struct {
	Components []Component `json:"components"`
}

// Component is a module, or the binary.
type Component struct {
	Type       string     `json:"type"`
	BOMRef     string     `json:"bom-ref,omitempty"`
	Name       string     `json:"name"`
	Version    string     `json:"version,omitempty"`
	PURL       string     `json:"purl,omitempty"`
	Hashes     []Hash     `json:"hashes,omitempty"`
	Properties []Property `json:"properties,omitempty"`
}

// Hash is a digest of a component.
type Hash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

// Property is a name and a value.
type Property struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Dependency says which components one depends on.
type Dependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

// File catalogues the Go binary at path.
func File(path string) (*BOM, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read build info: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("hash %s: %w", path, err)
	}
	return FromBuildInfo(info, h.Sum(nil)), nil
}

// FromBuildInfo catalogues a binary from its build info and its SHA-256.
// The document depends on nothing else: the same binary gives the same
// bytes, its serial number derived from the digest.
func FromBuildInfo(info *debug.BuildInfo, digest []byte) *BOM {
	main := module(info.Main)
	main.Type = "application"
	main.Hashes = []Hash{{Alg: "SHA-256", Content: hex.EncodeToString(digest)}}
	main.Properties = append(main.Properties, Property{Name: "cdx:gomod:build:env:GOVERSION", Value: info.GoVersion})
	for _, s := range info.Settings {
		switch s.Key {
		case "GOOS", "GOARCH", "CGO_ENABLED", "-trimpath", "-ldflags", "vcs.revision", "vcs.time", "vcs.modified":
			main.Properties = append(main.Properties, Property{Name: "cdx:gomod:build:" + s.Key, Value: s.Value})
		}
	}
	b := &BOM{
		BOMFormat:    "CycloneDX",
		SpecVersion:  SpecVersion,
		SerialNumber: serial(digest),
		Version:      1,
		Metadata: Metadata{
			Tools:     Tools{Components: []Component{{Type: "application", Name: "meka-sbom"}}},
			Component: main,
		},
		Components:   []Component{},
		Dependencies: []Dependency{},
	}
	deps := Dependency{Ref: main.BOMRef, DependsOn: []string{}}
	for _, d := range info.Deps {
		c := module(*d)
		b.Components = append(b.Components, c)
		deps.DependsOn = append(deps.DependsOn, c.BOMRef)
	}
	b.Dependencies = append(b.Dependencies, deps)
	return b
}

// module is a module as a library component: a replacement stands for
// what it replaces, naming it.
func module(m debug.Module) Component {
	var props []Property
	if m.Replace != nil {
		props = append(props, Property{Name: "cdx:gomod:replaces", Value: m.Path + "@" + m.Version})
		m = *m.Replace
	}
	v := m.Version
	if v == "(devel)" {
		v = ""
	}
	purl := "pkg:golang/" + m.Path
	if v != "" {
		purl += "@" + v
	}
	c := Component{Type: "library", BOMRef: purl, Name: m.Path, Version: v, PURL: purl, Properties: props}
	if sum, ok := strings.CutPrefix(m.Sum, "h1:"); ok {
		// go.sum's h1 is base64 of a SHA-256 (of the module's file list).
		if raw, err := base64.StdEncoding.DecodeString(sum); err == nil {
			c.Hashes = []Hash{{Alg: "SHA-256", Content: hex.EncodeToString(raw)}}
		}
	}
	return c
}

// serial is a version-5-shaped UUID URN from the binary's digest.
func serial(digest []byte) string {
	u := sha256.Sum256(append([]byte("meka-sbom:"), digest...))
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Write writes b as indented JSON.
func (b *BOM) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(b)
}

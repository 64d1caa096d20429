// Package release holds no code: its tests hold the release files at the
// repository's root to each other and to the binary they describe.
// .goreleaser.yaml declares the targets, the build flags and the archive
// names; agent.json (the ACP registry's) and harbor-agent.json must name
// the same platforms and archives; a build with the release's flags must
// print its stamped version; the Dockerfile must build an image that runs
// meka as nobody.
//
// It imports nothing from meka.
package release

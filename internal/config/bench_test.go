package config

import "testing"

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		if _, err := Parse("c.toml", []byte(fullConfig)); err != nil {
			b.Fatal(err)
		}
	}
}
func BenchmarkParseDuration(b *testing.B) {
	for b.Loop() {
		if _, err := ParseDuration("1h 30m 15s"); err != nil {
			b.Fatal(err)
		}
	}
}

package tool

import (
	"math/big"
	"testing"
)

func TestDecimal(t *testing.T) {
	cases := []struct {
		a, b    string
		cmp     int
		integer bool // of a
	}{
		{"0", "-0", 0, true},
		{"0.000", "0e10", 0, true},
		{"1", "1.0", 0, true},
		{"100", "1e2", 0, true},
		{"1.5e1", "15", 0, true},
		{"120", "12", 1, true},
		{"12", "123", -1, true},
		{"-1", "1", -1, true},
		{"-2", "-1", -1, true},
		{"-0.5", "0", -1, false},
		{"0.1", "0.09999999999999999999", 1, false},
		{"9007199254740993", "9007199254740992", 1, true},
		{"1e400", "9e399", 1, true},
		{"1e-400", "0", 1, false},
		{"1E+2", "100", 0, true},
		{"123456789012345678901234567890", "123456789012345678901234567891", -1, true},
	}
	for _, c := range cases {
		a, okA := parseDecimal(c.a)
		b, okB := parseDecimal(c.b)
		if !okA || !okB {
			t.Fatalf("parse %s, %s: %v %v", c.a, c.b, okA, okB)
		}
		if got := a.cmp(b); got != c.cmp {
			t.Errorf("cmp(%s, %s) = %d, want %d", c.a, c.b, got, c.cmp)
		}
		if got := b.cmp(a); got != -c.cmp {
			t.Errorf("cmp(%s, %s) = %d, want %d", c.b, c.a, got, -c.cmp)
		}
		if a.isInteger() != c.integer {
			t.Errorf("%s integer: %v", c.a, a.isInteger())
		}
	}
	for _, bad := range []string{"", "-", "1.", ".5", "1e", "1e+", "0x1", "1 ", "+1", "NaN"} {
		if _, ok := parseDecimal(bad); ok {
			t.Errorf("parsed %q", bad)
		}
	}
	for s, want := range map[string]string{"0": "0", "1.50": "1.5", "-2e3": "-2000", "0.0025": "0.0025", "1e30": "1e30", "12.5e-40": "125e-41"} {
		d, _ := parseDecimal(s)
		if got := d.String(); got != want {
			t.Errorf("String(%s) = %s, want %s", s, got, want)
		}
	}
}

// FuzzDecimal checks comparison and integrality against math/big on
// numbers whose exponents big.Rat handles quickly.
func FuzzDecimal(f *testing.F) {
	f.Add(int64(9007199254740993), int16(0), uint8(0), int64(9007199254740992), int16(0), uint8(3))
	f.Add(int64(-15), int16(-1), uint8(2), int64(-150), int16(-2), uint8(0))
	f.Fuzz(func(t *testing.T, m1 int64, e1 int16, z1 uint8, m2 int64, e2 int16, z2 uint8) {
		lit := func(m int64, e int16, z uint8) string {
			// z adds trailing fraction zeros, which must not matter.
			s := big.NewInt(m).String()
			if z%4 > 0 {
				s += "." + "0000"[:z%4]
			}
			return s + "e" + big.NewInt(int64(e%400)).String()
		}
		a, b := lit(m1, e1, z1), lit(m2, e2, z2)
		da, ok1 := parseDecimal(a)
		db, ok2 := parseDecimal(b)
		ra, ok3 := new(big.Rat).SetString(a)
		rb, ok4 := new(big.Rat).SetString(b)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			t.Fatalf("parse %s %s: %v %v %v %v", a, b, ok1, ok2, ok3, ok4)
		}
		if got, want := da.cmp(db), ra.Cmp(rb); got != want {
			t.Fatalf("cmp(%s, %s) = %d, want %d", a, b, got, want)
		}
		if got, want := da.isInteger(), ra.IsInt(); got != want {
			t.Fatalf("%s integer: %v, want %v", a, got, want)
		}
		if back, ok := new(big.Rat).SetString(da.String()); !ok || back.Cmp(ra) != 0 {
			t.Fatalf("String(%s) = %s", a, da.String())
		}
	})
}

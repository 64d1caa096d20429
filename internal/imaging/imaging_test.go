package imaging

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"golang.org/x/image/bmp"
)

func picture(w, h int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	return img
}

func encoded(t *testing.T, enc func(*bytes.Buffer, image.Image) error, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := enc(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func pngOf(b *bytes.Buffer, img image.Image) error  { return png.Encode(b, img) }
func jpegOf(b *bytes.Buffer, img image.Image) error { return jpeg.Encode(b, img, nil) }
func bmpOf(b *bytes.Buffer, img image.Image) error  { return bmp.Encode(b, img) }

func TestNormalize(t *testing.T) {
	small := encoded(t, pngOf, picture(40, 30))
	out, mt, err := Normalize(small)
	if err != nil || mt != "image/png" || !bytes.Equal(out, small) {
		t.Fatalf("a small png should pass untouched: %s %v", mt, err)
	}

	out, mt, err = Normalize(encoded(t, bmpOf, picture(50, 20)))
	if err != nil || mt != "image/png" {
		t.Fatalf("bmp: %s %v", mt, err)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(out)); err != nil || cfg.Width != 50 || cfg.Height != 20 {
		t.Fatalf("converted bmp: %+v %v", cfg, err)
	}

	out, mt, err = Normalize(encoded(t, jpegOf, picture(3000, 1500)))
	if err != nil || mt != "image/jpeg" {
		t.Fatalf("large jpeg: %s %v", mt, err)
	}
	if cfg, err := jpeg.DecodeConfig(bytes.NewReader(out)); err != nil || cfg.Width != MaxSide || cfg.Height != 1024 {
		t.Fatalf("scaled jpeg: %+v %v", cfg, err)
	}

	if _, _, err := Normalize([]byte("%PDF-1.7 not a picture")); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("pdf: %v", err)
	}
	// A header that claims a huge canvas is refused before decoding.
	bomb := encoded(t, pngOf, picture(1, 1))
	bomb[16], bomb[17], bomb[18], bomb[19] = 0, 0x01, 0, 0 // width 65536
	bomb[20], bomb[21], bomb[22], bomb[23] = 0, 0x01, 0, 0 // height 65536
	if _, _, err := Normalize(bomb); err == nil {
		t.Fatal("a 65536x65536 canvas was accepted")
	}
}

func FuzzNormalize(f *testing.F) {
	var b bytes.Buffer
	png.Encode(&b, picture(8, 8))
	f.Add(b.Bytes())
	f.Add([]byte("GIF89a"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, mt, err := Normalize(data)
		if err != nil {
			return
		}
		if len(out) > MaxBytes || sniff(out) == "" || mt == "" {
			t.Fatalf("normalized to %d bytes of %q", len(out), mt)
		}
	})
}

// Package imaging is meka's image pipeline: it turns whatever picture a
// user or a tool hands over into one a model accepts, sniffing the real
// format, converting what models do not read, and scaling down what is
// too large. It imports nothing from meka.
package imaging

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/bmp"
	"golang.org/x/image/draw"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"
)

// Limits of what goes to a model.
const (
	// MaxBytes bounds an image's encoded size.
	MaxBytes = 5 << 20
	// MaxSide bounds its longer side in pixels; providers scale larger
	// images down themselves, paying for the full upload.
	MaxSide = 2048
	// MaxInputBytes and MaxInputPixels bound what is decoded at all, so a
	// decompression bomb is refused before it is expanded.
	MaxInputBytes  = 64 << 20
	MaxInputPixels = 80_000_000
)

// ErrUnsupported is returned for data that is no image meka can read.
var ErrUnsupported = errors.New("not an image meka can read (png, jpeg, gif, webp, bmp or tiff)")

// Normalize returns data as an image a model accepts, with its media type.
// PNG, JPEG, GIF and WebP within the limits pass through untouched; other
// formats are converted to PNG; an image over MaxSide or MaxBytes is scaled
// down (JPEG for photographs, PNG otherwise). The declared type is not
// trusted: the format is sniffed from the bytes.
func Normalize(data []byte) ([]byte, string, error) {
	if len(data) > MaxInputBytes {
		return nil, "", fmt.Errorf("normalize image: %d MiB is over the %d MiB meka reads", len(data)>>20, MaxInputBytes>>20)
	}
	format := sniff(data)
	if format == "" {
		return nil, "", fmt.Errorf("normalize image: %w", ErrUnsupported)
	}
	cfg, err := decodeConfig(format, data)
	if err != nil {
		return nil, "", fmt.Errorf("normalize image: %w", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width*cfg.Height > MaxInputPixels {
		return nil, "", fmt.Errorf("normalize image: %dx%d pixels is over what meka decodes", cfg.Width, cfg.Height)
	}
	native := format == "png" || format == "jpeg" || format == "gif" || format == "webp"
	if native && len(data) <= MaxBytes && max(cfg.Width, cfg.Height) <= MaxSide {
		return data, "image/" + format, nil
	}
	img, err := decode(format, data)
	if err != nil {
		return nil, "", fmt.Errorf("normalize image: %w", err)
	}
	photo := format == "jpeg" || format == "webp"
	side := MaxSide
	for {
		out, mt, err := encode(scale(img, side), photo)
		if err != nil {
			return nil, "", fmt.Errorf("normalize image: %w", err)
		}
		if len(out) <= MaxBytes {
			return out, mt, nil
		}
		if side <= 256 {
			return nil, "", fmt.Errorf("normalize image: cannot bring it under %d MiB", MaxBytes>>20)
		}
		side = side * 3 / 4
	}
}

// sniff names the format of data from its magic bytes.
func sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "webp"
	case bytes.HasPrefix(b, []byte("BM")):
		return "bmp"
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return "tiff"
	}
	return ""
}

func decodeConfig(format string, b []byte) (image.Config, error) {
	r := bytes.NewReader(b)
	switch format {
	case "png":
		return png.DecodeConfig(r)
	case "jpeg":
		return jpeg.DecodeConfig(r)
	case "gif":
		return gif.DecodeConfig(r)
	case "webp":
		return webp.DecodeConfig(r)
	case "bmp":
		return bmp.DecodeConfig(r)
	}
	return tiff.DecodeConfig(r)
}

func decode(format string, b []byte) (image.Image, error) {
	r := bytes.NewReader(b)
	switch format {
	case "png":
		return png.Decode(r)
	case "jpeg":
		return jpeg.Decode(r)
	case "gif":
		return gif.Decode(r) // the first frame
	case "webp":
		return webp.Decode(r)
	case "bmp":
		return bmp.Decode(r)
	}
	return tiff.Decode(r)
}

// scale fits img within side pixels a side, keeping its proportions.
func scale(img image.Image, side int) image.Image {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if max(w, h) <= side {
		return img
	}
	if w >= h {
		w, h = side, max(1, h*side/w)
	} else {
		w, h = max(1, w*side/h), side
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, b, draw.Over, nil)
	return dst
}

func encode(img image.Image, photo bool) ([]byte, string, error) {
	var buf bytes.Buffer
	if photo {
		err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85})
		return buf.Bytes(), "image/jpeg", err
	}
	err := png.Encode(&buf, img)
	return buf.Bytes(), "image/png", err
}

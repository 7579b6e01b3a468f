package preserves_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

var annotatedDecode = preserves.DecodeOptions{Annotations: true}

// annotatedBinary is the suite's annotatedBinary (and, satisfying it too,
// looseEncodeBinary): annotations written, canonical order.
func annotatedBinary(t *testing.T, v preserves.Value) []byte {
	t.Helper()
	b, err := preserves.EncodeBinary(v, preserves.EncodeOptions{Annotations: true})
	if err != nil {
		t.Fatalf("annotated encoding: %v", err)
	}
	return b
}

func decodeBinary(t *testing.T, b []byte) preserves.Value {
	t.Helper()
	v, err := preserves.DecodeBinary(b, annotatedDecode)
	if err != nil {
		t.Fatalf("decoding % x: %v", b, err)
	}
	return v
}

func expectSame(t *testing.T, got, want preserves.Value) {
	t.Helper()
	if d := testutil.DiffAnnotated(got, want); d != "" {
		t.Fatal(d)
	}
}

// checkBinaryExpectations runs the binary expectations (1–4, 7, 8, 30–32)
// that case c declares.
func checkBinaryExpectations(t *testing.T, c suiteCase) {
	switch c.kind {
	case "Test", "NondeterministicTest":
		st := preserves.Strip(c.av)
		t.Run("1", func(t *testing.T) { expectSame(t, decodeBinary(t, preserves.EncodeCanonical(c.av)), st) })
		t.Run("2", func(t *testing.T) { expectSame(t, preserves.Strip(decodeBinary(t, c.bin)), st) })
		t.Run("3", func(t *testing.T) { expectSame(t, decodeBinary(t, c.bin), c.av) })
		t.Run("4", func(t *testing.T) { expectSame(t, decodeBinary(t, annotatedBinary(t, c.av)), c.av) })
		t.Run("7", func(t *testing.T) {
			if got := annotatedBinary(t, c.av); !bytes.Equal(got, c.bin) {
				t.Fatalf("annotatedBinary = % x, want % x", got, c.bin)
			}
		})
		if c.kind == "Test" {
			// Our loose encoder is the annotated one: canonical order is one
			// of the orders looseEncodeBinary may use.
			t.Run("8", func(t *testing.T) {
				if got := annotatedBinary(t, c.av); !bytes.Equal(got, c.bin) {
					t.Fatalf("looseEncodeBinary = % x, want % x", got, c.bin)
				}
			})
		}
	case "DecodeError":
		t.Run("30", func(t *testing.T) { checkDecodeFails(t, c.bin, preserves.ErrSyntax) })
	case "DecodeShort":
		t.Run("31", func(t *testing.T) { checkDecodeFails(t, c.bin, preserves.ErrUnexpectedEOF) })
	case "DecodeEOF":
		t.Run("32", func(t *testing.T) { checkDecodeFails(t, c.bin, preserves.ErrEmpty) })
	}
}

func checkDecodeFails(t *testing.T, b []byte, class error) {
	t.Helper()
	v, err := preserves.DecodeBinary(b, annotatedDecode)
	if err == nil {
		t.Fatalf("decoding % x succeeded with %v", b, v)
	}
	for _, other := range []error{preserves.ErrSyntax, preserves.ErrUnexpectedEOF, preserves.ErrEmpty, preserves.ErrLimit} {
		if errors.Is(err, other) != (other == class) {
			t.Fatalf("decoding % x: error %q has the wrong class (want %v)", b, err, class)
		}
	}
}

// TestConformanceWholeFile: the whole text document equals the whole binary
// document, annotations included, and encodes to it byte for byte. This
// covers comments, #!, the canonical order of a 186-entry dictionary and
// every syntax used in the file.
func TestConformanceWholeFile(t *testing.T) {
	doc, _ := loadSuite(t)
	bin := readSuiteFile(t, "samples.bin")
	expectSame(t, doc, decodeBinary(t, bin))
	if got := annotatedBinary(t, doc); !bytes.Equal(got, bin) {
		n := 0
		for n < min(len(got), len(bin)) && got[n] == bin[n] {
			n++
		}
		t.Fatalf("annotatedBinary(decodeText(samples.pr)) differs from samples.bin at byte %d (lengths %d, %d)", n, len(got), len(bin))
	}
	// And the text writer round-trips the whole document, both layouts.
	checkTextRoundTrip(t, doc, true)
}

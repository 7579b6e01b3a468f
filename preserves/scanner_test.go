package preserves

import (
	"bytes"
	"errors"
	"testing"
)

// scanAll scans b fed in pieces of chunk bytes (0: all at once) and
// returns where the first value ends (-1: not complete) or the error.
func scanAll(s *Scanner, b []byte, chunk int) (int, error) {
	if len(b) == 0 {
		return -1, nil
	}
	s.Begin(b[0])
	pos, avail := 0, 0
	for avail < len(b) {
		if chunk > 0 {
			avail = min(len(b), avail+chunk)
		} else {
			avail = len(b)
		}
		next, done, err := s.Scan(b[:avail], pos)
		if err != nil {
			return -1, err
		}
		if done {
			return next, nil
		}
		pos = next
	}
	return -1, nil
}

func TestScannerBoundaries(t *testing.T) {
	cases := []struct {
		name string
		in   string
		end  int // -1: incomplete
	}{
		{"binary atom", "\x80rest", 1},
		{"binary record", "\xb4\xb3\x01A\xb0\x01\x05\x84\x80", 8},
		{"binary annotated", "\x85\xb1\x01c\xb5\x84\x80", 6},
		{"binary long string", "\xb1\x81\x01" + string(make([]byte, 129)) + "\x80", 132},
		{"binary incomplete", "\xb5\xb5\x84", -1},
		{"binary embedded", "\x86\xb5\x84\x80", 3},
		{"text record", "<a b> <c>", 5},
		{"text bare atom ends at delimiter", "123 ", 3},
		{"text bare atom waits", "123", -1},
		{"text string with bracket", `["]\"" x] y`, 9},
		{"text quoted symbol", "|a>b| ", 5},
		{"text bytes", `#"]" `, 4},
		{"text base64", "#[YW==] ", 7},
		{"text hex", `#x"41" `, 6},
		{"text hex double", `#xd"3ff0000000000000" `, 21},
		{"text comment", "[1 ; ]\n 2] ", 10},
		{"text set", "#{a} ", 4},
		{"text annotation", "@a b ", 4},
		{"text embedded", "#:[1] ", 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, chunk := range []int{0, 1, 2, 3} {
				var s Scanner
				end, err := scanAll(&s, []byte(c.in), chunk)
				if err != nil || end != c.end {
					t.Fatalf("chunk %d: end %d, %v; want %d", chunk, end, err, c.end)
				}
			}
		})
	}
}

func TestScannerErrors(t *testing.T) {
	cases := []struct {
		name  string
		s     Scanner
		in    string
		class error
	}{
		{"stray end", Scanner{}, "\x84", ErrSyntax},
		{"bad tag", Scanner{}, "\xb5\x90", ErrSyntax},
		{"bad varint", Scanner{}, "\xb1\x80\x00", ErrSyntax},
		{"binary depth", Scanner{MaxDepth: 2}, "\xb5\xb5\xb5", ErrLimit},
		{"text depth", Scanner{MaxDepth: 2}, "[[#{", ErrLimit},
		{"atom length", Scanner{MaxLength: 4}, "\xb1\x05", ErrLimit},
		{"values", Scanner{MaxValues: 3}, "\xb5\x80\x80\x80\x84", ErrLimit},
		{"text values", Scanner{MaxValues: 2}, "[a b c]", ErrLimit},
		{"unbalanced", Scanner{}, "]", ErrSyntax},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			_, err := scanAll(&s, []byte(c.in), 0)
			var pe *Error
			if !errors.Is(err, c.class) || !errors.As(err, &pe) {
				t.Fatalf("error %v, want class %v", err, c.class)
			}
		})
	}
}

// FuzzScanner holds the scanner to the decoders: the binary and text
// encodings of any decodable value are delimited exactly, in any chunking,
// alone or followed by another value, and garbage never panics.
func FuzzScanner(f *testing.F) {
	f.Add([]byte("\xb5\xb5\xb0\x01\x00\xb4\xb3\x01A\x84\x84\x84"), 1)
	f.Add([]byte("\x85\xb1\x01c\x86\xb5\x84"), 2)
	f.Add([]byte("\x87\x08\x00\x00\x00\x00\x00\x00\x00\x00"), 3)
	f.Add([]byte(`<a "s\"]" |q>| #"b" #[YQ==] 1.5 #{x} @ann [#:y]>`), 1)
	f.Fuzz(func(t *testing.T, in []byte, chunk int) {
		chunk = max(chunk%17, 0)
		var s Scanner
		_, _ = scanAll(&s, in, chunk) // never panics on garbage
		v, err := DecodeBinary(in, DecodeOptions{Annotations: true, Embedded: func(v Value) (any, error) { return v, nil }})
		if err != nil {
			v, err = ParseText(string(in))
			if err != nil {
				return
			}
		}
		enc, err := EncodeBinary(v, EncodeOptions{Annotations: true})
		if err != nil {
			return
		}
		txt := append(AppendText(nil, v), '\n')
		for _, b := range [][]byte{enc, txt} {
			want := len(b)
			if !IsBinaryStart(b[0]) {
				want-- // the value ends before the newline
			}
			for _, in := range [][]byte{b, append(bytes.Clone(b), b...)} {
				if end, err := scanAll(&s, in, chunk); err != nil || end != want {
					t.Fatalf("end %d, %v of %q (chunk %d), want %d", end, err, in, chunk, want)
				}
			}
		}
	})
}

func BenchmarkScannerBinary(b *testing.B) {
	rec := NewRecord(Symbol("message"), Int(1), String("some text of a typical length"), Sequence{Int(2), Symbol("x")})
	var seq Sequence
	for range 200 {
		seq = append(seq, rec)
	}
	enc := EncodeCanonical(seq)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		var s Scanner
		s.Begin(enc[0])
		if _, done, err := s.Scan(enc, 0); !done || err != nil {
			b.Fatal(done, err)
		}
	}
}

func BenchmarkScannerText(b *testing.B) {
	rec := NewRecord(Symbol("message"), Int(1), String("some text of a typical length"), Sequence{Int(2), Symbol("x")})
	var seq Sequence
	for range 200 {
		seq = append(seq, rec)
	}
	enc := AppendText(nil, seq)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		var s Scanner
		s.Begin(enc[0])
		if _, done, err := s.Scan(enc, 0); !done || err != nil {
			b.Fatal(done, err)
		}
	}
}

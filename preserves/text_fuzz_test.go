package preserves_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// FuzzTextReader feeds arbitrary text to the reader. It checks that the
// reader never panics, that every failure is a *preserves.Error of one of the
// four classes, that the streaming, positions and plain modes agree, and
// that whatever was read writes out (compact and indented) to text that
// reads back as the same value with the same annotations.
//
// Seeds: every case of the conformance suite (the texts of the Parse* cases
// and the written-out annotatedValue of the Test cases) and samples.pr itself.
func FuzzTextReader(f *testing.F) {
	_, cases := loadSuite(f)
	for _, c := range cases {
		switch {
		case c.av != nil:
			f.Add([]byte(preserves.FormatText(c.av)))
		case c.text != "":
			f.Add([]byte(c.text))
		}
	}
	f.Add(readSuiteFile(f, "samples.pr"))
	f.Add([]byte("# c\n#!/bin/sh\n@a [1 2.5 -3e4 #{x} {k: #:v} <r |q s|> #x\"00\" #[AA==] \"\\uD834\\uDD1E\"]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		annOpts := preserves.TextOptions{Annotations: true}
		vs, err := preserves.ReadAllText(data, annOpts)
		checkErrClass(t, err)
		_, err1 := preserves.ParseTextOptions(data, preserves.TextOptions{})
		checkErrClass(t, err1)

		// The plain and positions modes see the same values.
		plain, perr := preserves.ReadAllText(data, preserves.TextOptions{})
		pos, qerr := preserves.ReadAllText(data, preserves.TextOptions{Annotations: true, Positions: true})
		if (err == nil) != (perr == nil) || (err == nil) != (qerr == nil) || len(plain) != len(vs) || len(pos) != len(vs) {
			t.Fatalf("modes disagree: %v / %v / %v; %d / %d / %d values", err, perr, qerr, len(vs), len(plain), len(pos))
		}
		for i := range vs {
			if preserves.HasAnnotations(plain[i]) || !preserves.Equal(plain[i], vs[i]) {
				t.Fatalf("plain value %d = %v, annotated read gave %v", i, plain[i], vs[i])
			}
			if d := testutil.DiffAnnotated(pos[i], vs[i]); d != "" {
				t.Fatalf("positions value %d: %s", i, d)
			}
		}

		// The streaming reader, refilling at every byte, agrees too.
		r := preserves.NewTextReader(iotest.HalfReader(bytes.NewReader(data)), annOpts)
		for i := 0; ; i++ {
			v, serr := r.Next()
			if serr == io.EOF {
				if err != nil || i != len(vs) {
					t.Fatalf("stream: EOF after %d values; in memory: %d values, %v", i, len(vs), err)
				}
				break
			}
			if serr != nil {
				if err == nil || i != len(vs) || serr.Error() != err.Error() {
					t.Fatalf("stream: error %v after %d values; in memory: %v after %d", serr, i, err, len(vs))
				}
				break
			}
			if i >= len(vs) {
				t.Fatalf("stream: extra value %v", v)
			}
			if d := testutil.DiffAnnotated(v, vs[i]); d != "" {
				t.Fatalf("stream value %d: %s", i, d)
			}
		}

		// Written text reads back equal, annotations included.
		for _, v := range vs {
			for _, text := range []string{preserves.FormatText(v), preserves.FormatTextIndent(v, " ")} {
				back, err := preserves.ParseTextOptions([]byte(text), annOpts)
				if err != nil {
					t.Fatalf("written text %q does not read back: %v", text, err)
				}
				if d := testutil.DiffAnnotated(back, v); d != "" {
					t.Fatalf("written text %q reads back differently: %s", text, d)
				}
			}
		}
	})
}

func checkErrClass(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var pe *preserves.Error
	if !errors.As(err, &pe) || !pe.Pos.IsValid() {
		t.Fatalf("error %v (%T) is not a positioned *preserves.Error", err, err)
	}
	if pe.Open.IsValid() && (pe.Open.Offset >= pe.Pos.Offset || pe.OpenWhat == "") {
		t.Fatalf("error %v: the compound named opens at %v, not before %v", err, pe.Open, pe.Pos)
	}
	n := 0
	for _, c := range []error{preserves.ErrSyntax, preserves.ErrUnexpectedEOF, preserves.ErrEmpty, preserves.ErrLimit} {
		if errors.Is(err, c) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("error %v has %d classes", err, n)
	}
}

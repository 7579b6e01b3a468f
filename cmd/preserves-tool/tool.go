package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/syndicate-go/syndicate/preserves"
)

// options are the parsed command-line flags.
type options struct {
	in     string // text, binary or auto
	out    string // text, binary or canonical
	indent bool
	strip  bool
	files  []string
}

// errUsage marks a command-line error (exit status 2).
var errUsage = errors.New("usage")

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("preserves-tool", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.in, "i", "auto", "input syntax: text, binary or auto (binary when the first byte is a binary tag)")
	fs.StringVar(&o.out, "o", "text", "output syntax: text, binary (annotations kept) or canonical (canonical binary)")
	fs.BoolVar(&o.indent, "indent", false, "indent text output (pretty-print)")
	fs.BoolVar(&o.strip, "strip", false, "strip annotations")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: preserves-tool [-i text|binary|auto] [-o text|binary|canonical] [-indent] [-strip] [FILE...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, errUsage
	}
	if !slices.Contains([]string{"text", "binary", "auto"}, o.in) {
		fmt.Fprintf(stderr, "preserves-tool: unknown input syntax %q\n", o.in)
		return o, errUsage
	}
	if !slices.Contains([]string{"text", "binary", "canonical"}, o.out) {
		fmt.Fprintf(stderr, "preserves-tool: unknown output syntax %q\n", o.out)
		return o, errUsage
	}
	o.files = fs.Args()
	if len(o.files) == 0 {
		o.files = []string{"-"}
	}
	return o, nil
}

// run is the whole command with its environment injected, so tests can call
// it directly. It returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	out := bufio.NewWriter(stdout)
	status := 0
	for _, name := range o.files {
		if err := convertFile(o, name, stdin, out); err != nil {
			fmt.Fprintln(stderr, err)
			status = 1
		}
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(stderr, "preserves-tool: writing output: %v\n", err)
		status = 1
	}
	return status
}

// convertFile converts every value of one input. The error is ready to print.
func convertFile(o options, name string, stdin io.Reader, out *bufio.Writer) error {
	display := name
	var r io.Reader = stdin
	if name == "-" {
		display = "<stdin>"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("preserves-tool: %v", err)
		}
		defer f.Close()
		r = f
	}
	br := bufio.NewReaderSize(r, 64<<10)
	binary := o.in == "binary"
	if o.in == "auto" {
		first, err := br.Peek(1)
		if err != nil && err != io.EOF {
			return fmt.Errorf("preserves-tool: %s: %v", display, err)
		}
		// Every binary tag is in 80..BF, where no UTF-8 text can start.
		binary = len(first) == 1 && first[0] >= 0x80 && first[0] < 0xC0
	}
	next := textValues(br, display, !o.strip)
	if binary {
		next = binaryValues(br, display, !o.strip)
	}
	var buf []byte
	for {
		v, err := next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if o.strip {
			v = preserves.Strip(v)
		}
		buf = buf[:0]
		switch {
		case o.out == "canonical":
			buf = preserves.AppendCanonical(buf, v)
		case o.out == "binary":
			buf, err = preserves.AppendBinary(buf, v, preserves.EncodeOptions{Annotations: true})
			if err != nil {
				return fmt.Errorf("preserves-tool: %s: %v", display, err)
			}
		case o.indent:
			buf = append(append(buf, preserves.FormatTextIndent(v, "  ")...), '\n')
		default:
			buf = append(append(buf, preserves.FormatText(v)...), '\n')
		}
		if _, err := out.Write(buf); err != nil {
			return fmt.Errorf("preserves-tool: writing output: %v", err)
		}
	}
}

// textValues returns an iterator over the text values of r. Its errors
// already carry file:line:col.
func textValues(r io.Reader, name string, annotations bool) func() (preserves.Value, error) {
	tr := preserves.NewTextReader(r, preserves.TextOptions{File: name, Annotations: annotations})
	return func() (preserves.Value, error) {
		v, err := tr.Next()
		var pe *preserves.Error
		if err != nil && err != io.EOF && !errors.As(err, &pe) {
			return nil, fmt.Errorf("preserves-tool: %s: %v", name, err) // a read error
		}
		return v, err
	}
}

// binaryValues returns an iterator over the binary values of r; decoding
// errors are given the file name, so they print as `file: offset N: msg`.
func binaryValues(r io.Reader, name string, annotations bool) func() (preserves.Value, error) {
	br := preserves.NewBinaryReader(r, preserves.DecodeOptions{Annotations: annotations, MaxLength: -1})
	return func() (preserves.Value, error) {
		v, err := br.Next()
		var pe *preserves.Error
		if errors.As(err, &pe) {
			e := *pe
			e.Pos.File = name
			return nil, &e
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("preserves-tool: %s: %v", name, err)
		}
		return v, err
	}
}

// Package cmdline is what the command lines of both binaries share (they
// are cobra commands): the spellings Go's flag package accepted, the
// version, and man pages generated from the command tree.
package cmdline

import (
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// NormaliseArgs rewrites `-name` and `-name=VALUE`, where name is a long
// flag of root or any command under it (and longer than one letter), to
// `--name…`. Go's flag package, which both binaries used before cobra,
// accepted one dash as well as two; pflag reads `-name` as a cluster of
// one-letter flags. Arguments after `--` are left alone.
func NormaliseArgs(root *cobra.Command, args []string) []string {
	long := map[string]bool{"help": true, "version": true}
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		}
		for _, s := range c.Commands() {
			visit(s)
		}
	}
	visit(root)
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && long[name] {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

// ManPages writes a man page (section 1) for root and each command under
// it into dir, named as cobra/doc names them (syndicate-status.1). The
// date is fixed so that the pages change only when the commands do. The
// pages are made through Markdown, where a Preserves record reads as an
// HTML tag, so the texts of root's tree are changed to quote records as
// code: pass a tree made for this.
func ManPages(root *cobra.Command, dir string) error {
	date := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	root.DisableAutoGenTag = true
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		c.Short, c.Long, c.Use = codeRecords(c.Short), codeRecords(c.Long), codeRecords(c.Use)
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { f.Usage = codeRecords(f.Usage) })
		}
		for _, s := range c.Commands() {
			visit(s)
		}
	}
	visit(root)
	return doc.GenManTree(root, &doc.GenManHeader{Section: "1", Source: "syndicate-go", Manual: "syndicate-go manual", Date: &date}, dir)
}

// codeRecords wraps each outermost `<…>` of s in backquotes (a Markdown
// code span), so that Markdown shows it rather than reading a tag.
func codeRecords(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '<':
			if depth == 0 {
				b.WriteByte('`')
			}
			depth++
			b.WriteRune(r)
		case r == '>' && depth > 0:
			b.WriteRune(r)
			if depth--; depth == 0 {
				b.WriteByte('`')
			}
		default:
			b.WriteRune(r)
		}
	}
	if depth > 0 {
		return s // unbalanced: leave it as it was
	}
	return b.String()
}

// Width is the width to fit output to on w: the terminal's columns when
// w is a terminal, else $COLUMNS if set, else 0 (no limit: output for
// programs is never cut).
func Width(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

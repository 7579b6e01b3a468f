package script

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/syndicate-go/syndicate/preserves"
)

// ParseFile reads the Preserves text src (named file in positions) and
// parses it as a script. Every error is returned, sorted; a Preserves
// syntax error ends reading, but the instructions read before it are still
// checked (without complaining about the operand the cut removed).
func ParseFile(file string, src []byte) (*File, ErrorList) {
	vals, synErr := ReadValues(file, src)
	p := &parser{file: file, truncated: synErr != nil}
	p.presize(len(vals))
	if synErr != nil {
		p.errs = append(p.errs, synErr)
	}
	return p.file1(vals), p.errs
}

// ReadValues reads every top-level value of src with positions. It returns
// the values read before any syntax error, and that error as an *Error
// wrapping the *preserves.Error.
func ReadValues(file string, src []byte) ([]preserves.Value, *Error) {
	vals, err := readValues(file, src)
	if err != nil && errors.Is(err, preserves.ErrUnexpectedEOF) {
		// Comments are annotations and need a value to attach to, so a file
		// ending in comments (or holding only comments) is not valid
		// Preserves. The reference appends `[]` to every file for this
		// reason; do the same, but only when needed, and drop the anchor.
		more, err2 := readValues(file, append(append([]byte(nil), src...), "\n[]"...))
		if err2 == nil && len(more) == len(vals)+1 {
			return more[:len(vals)], nil
		}
	}
	return vals, err
}

func readValues(file string, src []byte) ([]preserves.Value, *Error) {
	vals, err := preserves.ReadAllText(src, textOptions(file))
	if err == nil {
		return vals, nil
	}
	return vals, SyntaxError(file, src, err)
}

// SyntaxError turns the error of reading src as Preserves text into an
// *Error at its position. A `;` where the reader failed is a comment in the
// pre-2023 Preserves syntax: the message says so and names the fix, and the
// error also wraps ErrLegacyComment.
func SyntaxError(file string, src []byte, err error) *Error {
	e := &Error{Msg: err.Error(), Err: err}
	var pe *preserves.Error
	if errors.As(err, &pe) {
		e.Pos, e.Msg = pe.Pos, pe.Detail()
		if e.Pos.File == "" {
			e.Pos.File = file
		}
		if o := pe.Pos.Offset; pe.Pos.IsValid() && o >= 0 && o < len(src) && src[o] == ';' {
			e.Msg = "unexpected ';': ';' comments are legacy Preserves syntax, replaced by '#' " +
				"(a '#' and a space start a comment); `syndicate fmt --upgrade FILE` rewrites them"
			e.Err = legacyError{err}
		}
	} else {
		e.Pos = preserves.Pos{File: file}
	}
	return e
}

// ErrEmbeddedSyntax is why `#:v` in a script is a syntax error: scripts
// name capabilities through variables, never literally (services spec §3.5).
var ErrEmbeddedSyntax = errors.New("script: embedded-value syntax is not allowed in scripts")

func noEmbedded(preserves.Value) (any, error) { return nil, ErrEmbeddedSyntax }

// textOptions are the options scripts are read with.
func textOptions(file string) preserves.TextOptions {
	return preserves.TextOptions{File: file, Positions: true, Annotations: true, Embedded: noEmbedded}
}

// Check parses and statically checks every script named by paths without
// running anything. A directory is searched recursively for *.pr files
// (hidden files and directories are skipped, as the config watcher does). It
// returns nil or a sorted ErrorList of every error and warning in every
// file, I/O errors included; Failed tells whether any entry is an error.
func Check(paths ...string) error {
	var all ErrorList
	WalkScripts(paths, func(path string, src []byte, err error) {
		if err != nil {
			all = append(all, &Error{Pos: preserves.Pos{File: path}, Msg: err.Error(), Err: err})
			return
		}
		f, errs := ParseFile(path, src)
		all = append(all, errs...)
		all = append(all, f.Warnings...)
	})
	all.Sort()
	return all.Err()
}

// IsScriptName reports whether a final path component names a script
// (services spec §3.2): not hidden, valid UTF-8, ending in ".pr". The
// config watcher, check and validation share it.
func IsScriptName(name string) bool {
	return !strings.HasPrefix(name, ".") && utf8.ValidString(name) && strings.HasSuffix(name, ".pr")
}

// WalkScripts calls visit with the contents of every script named by
// paths: a file named explicitly whatever its name, and below a directory
// every file whose name IsScriptName, hidden directories skipped (a
// directory named explicitly is searched even when hidden). I/O errors
// are passed to visit with a nil src.
func WalkScripts(paths []string, visit func(path string, src []byte, err error)) {
	read := func(path string) {
		src, err := os.ReadFile(path)
		visit(path, src, err)
	}
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil {
			visit(root, nil, err)
			continue
		}
		if !info.IsDir() {
			read(root)
			continue
		}
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				visit(path, nil, err)
			case path == root:
			case d.IsDir() && strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			case !d.IsDir() && IsScriptName(d.Name()):
				read(path)
			}
			return nil
		})
		if err != nil {
			visit(root, nil, err)
		}
	}
}

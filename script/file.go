package script

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
	f := &File{Name: file, Body: p.block(vals, true)}
	if synErr != nil {
		p.errs = append(p.errs, synErr)
	}
	p.errs.Sort()
	return f, p.errs
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
	vals, err := preserves.ReadAllText(src, preserves.TextOptions{File: file, Positions: true, Annotations: true, Embedded: noEmbedded})
	if err == nil {
		return vals, nil
	}
	e := &Error{Msg: err.Error(), Err: err}
	var pe *preserves.Error
	if errors.As(err, &pe) {
		e.Pos, e.Msg = pe.Pos, pe.Msg
		if e.Pos.File == "" {
			e.Pos.File = file
		}
	} else {
		e.Pos = preserves.Pos{File: file}
	}
	return vals, e
}

// ErrEmbeddedSyntax is why `#:v` in a script is a syntax error: scripts
// name capabilities through variables, never literally (services spec §3.5).
var ErrEmbeddedSyntax = errors.New("script: embedded-value syntax is not allowed in scripts")

func noEmbedded(preserves.Value) (any, error) { return nil, ErrEmbeddedSyntax }

// Check parses and statically checks every script named by paths without
// running anything. A directory is searched recursively for *.pr files
// (hidden files and directories are skipped, as the config watcher does). It
// returns nil or a sorted ErrorList of every error in every file, I/O errors
// included.
func Check(paths ...string) error {
	var all ErrorList
	check := func(path string) {
		src, err := os.ReadFile(path)
		if err != nil {
			all = append(all, &Error{Pos: preserves.Pos{File: path}, Msg: err.Error(), Err: err})
			return
		}
		_, errs := ParseFile(path, src)
		all = append(all, errs...)
	}
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil {
			all = append(all, &Error{Pos: preserves.Pos{File: root}, Msg: err.Error(), Err: err})
			continue
		}
		if !info.IsDir() {
			check(root)
			continue
		}
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				all = append(all, &Error{Pos: preserves.Pos{File: path}, Msg: err.Error(), Err: err})
				return nil
			}
			if path != root && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".pr") {
				check(path)
			}
			return nil
		})
		if err != nil {
			all = append(all, &Error{Pos: preserves.Pos{File: root}, Msg: err.Error(), Err: err})
		}
	}
	all.Sort()
	return all.Err()
}

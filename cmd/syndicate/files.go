package main

// check, fmt and disasm need no server.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/compile"
	"github.com/syndicate-go/syndicate/script/format"
	"github.com/syndicate-go/syndicate/script/validate"
)

func (cl *cli) check(_ context.Context, files []string) error {
	failed, err := validate.Report(cl.stdout, cl.stderr, "syndicate", files...)
	if err != nil {
		return err
	}
	if failed {
		return exitStatus(1)
	}
	return nil // warnings only, or nothing
}

// runDisasm prints what each file compiles to, in the stable format of
// compile.Disassemble, so a script author can see how the compiler read a
// construct (which names are bound where, which literals became patterns).
// Files that do not compile get their errors instead, as check prints them.
func (cl *cli) disasm(_ context.Context, files []string) error {
	nerr := 0
	for i, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintf(cl.stderr, "syndicate: %v\n", err)
			nerr++
			continue
		}
		prog, err := compile.CompileFile(file, src)
		if err != nil {
			var list script.ErrorList
			if !errors.As(err, &list) {
				return err
			}
			for _, e := range list {
				fmt.Fprintln(cl.stdout, e.Error())
			}
			nerr += len(list)
			continue
		}
		if i > 0 {
			fmt.Fprintln(cl.stdout) // each program's listing starts by naming its file
		}
		fmt.Fprint(cl.stdout, compile.Disassemble(prog))
	}
	if nerr > 0 {
		fmt.Fprintf(cl.stderr, "syndicate: %d error(s)\n", nerr)
		return exitStatus(1)
	}
	return nil
}

// fmtOpts are the flags of fmt.
type fmtOpts struct{ write, list, upgrade, check bool }

func (cl *cli) fmt(_ context.Context, o fmtOpts, args []string) error {
	write, list, upgrade, check := &o.write, &o.list, &o.upgrade, &o.check
	// transform makes the canonical layout and a note to print when the
	// file is rewritten.
	transform := func(path string, src []byte) ([]byte, string, error) {
		out, err := format.Source(path, src)
		return out, "", err
	}
	if *upgrade {
		// `fmt --upgrade [FILE…]`: each file's legacy `;` comments become
		// `#` comments in place, and nothing else changes (no layout: run
		// `fmt -w` afterwards for that). Without files it filters stdin to
		// stdout. A file that would still not read is left untouched and
		// reported with the place.
		*write, *list, *check = len(args) > 0, false, false
		transform = func(path string, src []byte) ([]byte, string, error) {
			out, n, err := format.Upgrade(path, src)
			return out, fmt.Sprintf("%s: %d comment(s) upgraded\n", path, n), err
		}
	}
	if len(args) == 0 {
		if *write {
			return usagef("fmt -w needs FILE arguments")
		}
		src, err := io.ReadAll(cl.stdin)
		if err != nil {
			return err
		}
		out, _, err := transform("<stdin>", src)
		if err != nil {
			return err
		}
		if *check {
			if !bytes.Equal(src, out) {
				fmt.Fprintln(cl.stdout, "<stdin>")
				return exitStatus(1)
			}
			return nil
		}
		_, err = cl.stdout.Write(out)
		return err
	}
	failed, differ := false, false
	// A directory means every script under it, as check reads them.
	script.WalkScripts(args, func(path string, src []byte, err error) {
		if err != nil {
			fmt.Fprintf(cl.stderr, "syndicate: %v\n", err)
			failed = true
			return
		}
		out, note, err := transform(path, src)
		if err != nil {
			fmt.Fprintf(cl.stderr, "%v\n", err)
			failed = true
			return
		}
		changed := !bytes.Equal(src, out)
		differ = differ || changed
		switch {
		case *list, *check:
			if changed {
				fmt.Fprintln(cl.stdout, path)
			}
		case *write:
			if changed {
				if err := writeFileAtomic(path, out); err != nil {
					fmt.Fprintf(cl.stderr, "syndicate: %v\n", err)
					failed = true
				} else {
					fmt.Fprint(cl.stdout, note)
				}
			}
		default:
			cl.stdout.Write(out)
		}
	})
	if failed || (*check && differ) {
		return exitStatus(1)
	}
	return nil
}

// writeFileAtomic replaces path by data through a temporary file in the same
// directory, keeping the file's mode, so a config watcher never reads a
// half-written script.
func writeFileAtomic(path string, data []byte) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	dir, base := filepath.Dir(path), filepath.Base(path)
	tmp, err := os.CreateTemp(dir, "."+base+".fmt-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

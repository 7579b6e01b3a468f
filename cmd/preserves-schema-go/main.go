// Command preserves-schema-go compiles Preserves Schema files (.prs) into
// Go: one package per module, one type per definition, each with a
// Parse… function and a ToValue method. See the preserves/schema package
// for the mapping.
//
//	preserves-schema-go -o OUTDIR -import IMPORTPATH [flags] SCHEMADIR
//
// Every .prs file below SCHEMADIR is a module named by its path
// (a/b.prs is the module a.b); references between them resolve across
// the whole directory. The package of module a.b is OUTDIR/ab, imported
// as IMPORTPATH/ab. With -exact MODULE, that module's records must have
// exactly their listed fields (the schema language allows more).
package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

type multi map[string]string

func (m multi) String() string { return fmt.Sprint(map[string]string(m)) }
func (m multi) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return errors.New("expected NAME=VALUE")
	}
	m[k] = v
	return nil
}

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "preserves-schema-go:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("preserves-schema-go", flag.ContinueOnError)
	out := fs.String("o", ".", "output directory (one subdirectory per module)")
	imp := fs.String("import", "", "import path of the output directory (required when modules refer to each other)")
	bundle := fs.String("bundle", "", "also write the compiled bundle (binary <bundle …>) to this file")
	aliases, pkgs := multi{}, multi{}
	var skip, exact list
	fs.Var(aliases, "alias", "NAME=MODULE: a reference NAME.X means MODULE.X (repeatable)")
	fs.Var(pkgs, "package", "MODULE=NAME: the Go package name of a module (repeatable)")
	fs.Var(&skip, "skip", "a .prs file (relative to SCHEMADIR) to leave out (repeatable)")
	fs.Var(&exact, "exact", "MODULE: its records must have exactly their listed fields, not at least (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: preserves-schema-go [flags] SCHEMADIR")
	}
	b, err := schema.ReadDir(fs.Arg(0), skip...)
	if err != nil {
		return err
	}
	b.Aliases = map[string]schema.ModulePath{}
	for k, v := range aliases {
		b.Aliases[k] = strings.Split(v, ".")
	}
	exacts := map[string]bool{}
	for _, m := range exact {
		if b.Module(strings.Split(m, ".")) == nil {
			return fmt.Errorf("-exact %s: no such module", m)
		}
		exacts[m] = true
	}
	files, err := schema.Generate(b, schema.Options{ImportPrefix: *imp, Packages: pkgs, Exact: exacts})
	if err != nil {
		return err
	}
	for _, n := range slices.Sorted(maps.Keys(files)) {
		p := filepath.Join(*out, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			return err
		}
	}
	if *bundle != "" {
		return os.WriteFile(*bundle, preserves.EncodeCanonical(b.Value()), 0o644)
	}
	return nil
}

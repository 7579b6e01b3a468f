// Package validate checks the literal service declarations of `.pr` scripts
// against the server's schemas (service.prs, externalServices.prs,
// internalServices.prs, transportAddress.prs) without running anything. It
// is what `syndicate-server --check` and `syndicate check` add to the
// script compiler's own checks, so that `restart: sometimes` or an empty
// argv is reported as `file:line:col: message` before the server ever sees
// it (at run time such a declaration would only produce a warning and a
// `failed` service state).
//
// # What is checked
//
// Every value a script asserts or sends (at any depth: top level, `?`
// bodies, `?-` bodies, retargeted instructions, conditionals) whose label is
// one of the service vocabulary:
//
//   - `<daemon ID SPEC>`: SPEC is a DaemonProcessSpec, elaborated by
//     externalservices.CheckSpec, the elaboration the daemon service runs
//     (externalservices.ParseSpec): a command string, `[PROGRAM ARG...]`,
//     `<one-shot CMD>`, or a dictionary with a valid `argv` and valid
//     optional keys, ours included (docs/protocol.md). Every problem is
//     reported, each with its class (externalservices.ErrNotASpec,
//     ErrInvalidField, ErrUnknownKey); unknown keys are errors here, with a
//     "did you mean" suggestion (the reference ignores them; the daemon
//     service warns at run time).
//   - `<require-service NAME>`, `<run-service NAME>`, `<restart-service
//     NAME>`, `<service-state NAME STATE>`, `<service-object NAME OBJ>`:
//     their arity, and NAME when it has the shape of a built-in service
//     (`<daemon ID>`, `<config-watcher PATH ENV>`, `<relay-listener ADDR
//     GK>`, `<gatekeeper BINDSPACE>`, `<milestone NAME>`,
//     `<http-static-files DIR N>`, `<http-router HTTPD>`, `<debt-reporter
//     SECONDS>`, `<timer-driver DATASPACE>`), including the transport address `<tcp HOST PORT>` or
//     `<unix PATH>`.
//   - `<depends-on DEPENDER <service-state DEPENDEE STATE>>`: the dependee
//     must be a service-state record (otherwise the dependency tracker cannot
//     deduce which service to require).
//   - a built-in service name asserted on its own.
//
// The service requests and built-in service names are parsed with the
// parsers generated from the schemas (dataspace/schemas/…, and
// transport.ParseRelayListener for relay listeners), the very parsers the
// services run, so `--check` and the runtime agree; the first mismatch in
// each declaration is reported at the part that is wrong. A daemon spec is
// checked by the elaboration the daemon service performs (above), so
// `--check` and the runtime agree on it (services/daemon's
// TestRuntimeAndCheckAgree).
//
// Script variables make a value's shape undecidable: a part written `$x` (or
// any other non-literal expression) becomes a schema.Wildcard, which every
// pattern accepts, and only what is literal is checked. Capabilities are always variables in scripts, so a literal where
// the schema wants one (the gatekeeper of a relay listener) is an error.
//
// Across all the files checked together, Binds warns about a bind with a
// key asserted into a dataspace that is also handed out attenuated by
// caveats that let the holder observe it (binds.go).
//
// Patterns (`? PATTERN …`) and `let` values are not declarations and are not
// checked. Every error wraps ErrInvalid and is a *script.Error, so that the
// lists of the compiler and of this package merge into one script.ErrorList.
package validate

import (
	"errors"
	"fmt"
	"io"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
	"github.com/syndicate-go/syndicate/script"
)

// ErrInvalid is the class of every validation error (test with errors.Is).
var ErrInvalid = errors.New("validate: invalid service declaration")

// Source validates the declarations of one script file and returns the
// errors, sorted (nil if none). Script syntax and compile errors are not
// reported here (script.ParseFile reports them); the declarations that
// could be read are still checked.
func Source(file string, src []byte) script.ErrorList {
	f, _ := script.ParseFile(file, src)
	v := &validator{file: file}
	for _, in := range f.Body {
		v.instr(in)
	}
	v.errs.Sort()
	return v.errs
}

// Declaration validates one value that is about to be asserted or sent
// (for example by `syndicate assert`, or a service checking a request at
// run time). Positions are reported when v carries them (a value read with
// preserves.TextOptions.Positions, or built by a program compiled with
// compile.Options.Positions, whose positions are in the side table);
// otherwise the errors have the zero position and print as the message alone.
// Embedded values count as capabilities.
func Declaration(v preserves.Value) script.ErrorList {
	val := &validator{}
	val.declaration(preserves.StripRemembering(v)) // the checks read plain values
	val.errs.Sort()
	return val.errs
}

// CheckAll is CheckTree of paths as lone files (Tree.Files).
func CheckAll(paths ...string) error { return CheckTree(Tree{Files: paths}) }

// CheckTree is script.Check followed by Source, Binds and AnalyzeTree (the
// whole-tree analysis) over the scripts of t: every compile error,
// warning and validation error, in one sorted script.ErrorList (nil if
// there are none; script.Failed tells whether any entry is an error rather
// than a warning). This is what `--check` runs.
func CheckTree(t Tree) error {
	paths := t.paths()
	all, _ := script.Check(paths...).(script.ErrorList) // nil or a list
	script.WalkScripts(paths, func(path string, src []byte, err error) {
		if err == nil { // I/O errors were reported by script.Check
			all = append(all, Source(path, src)...)
		}
	})
	all = append(all, Binds(paths...)...)
	all = append(all, AnalyzeTree(t)...)
	all.Sort()
	return all.Err()
}

// Report is ReportTree of paths as lone files.
func Report(out, errOut io.Writer, prog string, paths ...string) (failed bool, err error) {
	return ReportTree(out, errOut, prog, Tree{Files: paths})
}

// ReportTree runs CheckTree on t and prints its findings as both commands'
// `check` do: each problem on out, then the summary, after "PROG: ", on
// errOut. failed is whether any problem is an error (warnings alone pass);
// err is a failure that is not a list of problems (printed by the caller).
func ReportTree(out, errOut io.Writer, prog string, t Tree) (failed bool, err error) {
	err = CheckTree(t)
	var list script.ErrorList
	if err == nil || !errors.As(err, &list) {
		return err != nil, err
	}
	for _, e := range list {
		fmt.Fprintln(out, e.Error())
	}
	fmt.Fprintf(errOut, "%s: %s\n", prog, list.Summary())
	return script.Failed(list), nil
}

type validator struct {
	file string
	errs script.ErrorList
}

func (v *validator) errorf(at preserves.Value, format string, args ...any) {
	v.add(preserves.PosOf(at), nil, format, args...)
}

// add records an error at pos. Its class is ErrInvalid and, when cause is
// not nil, the classes of cause too (a *schema.ParseError: ErrParse, and
// the class of a daemon spec problem).
func (v *validator) add(pos preserves.Pos, cause error, format string, args ...any) {
	if pos.File == "" {
		pos.File = v.file
	}
	err := ErrInvalid
	if cause != nil {
		err = errors.Join(ErrInvalid, cause)
	}
	v.errs = append(v.errs, &script.Error{Pos: pos, Msg: fmt.Sprintf(format, args...), Err: err})
}

// instr checks what in and the instructions nested in it assert or send.
func (v *validator) instr(in script.Instr) {
	switch x := in.(type) {
	case *script.Assert:
		v.declaration(value(x.Value))
	case *script.Send:
		v.declaration(value(x.Value))
	}
	script.EachSubInstr(in, v.instr)
}

// unknown marks a non-literal part of a value (a variable, an attenuation,
// a convenience expression): its shape cannot be decided statically. It is
// the schema wildcard, so the generated parsers skip it.
type unknown = schema.Wildcard

// value converts an expression to a plain Value whose compounds are
// remembered in the position side table (as a script compiled with
// compile.Options.Positions builds them, so the parsers locate errors the
// same way), non-literal parts replaced by an embedded unknown{} (scripts
// cannot contain literal embedded values, so the marker is unambiguous).
func value(e script.Expr) preserves.Value {
	switch x := e.(type) {
	case *script.Lit:
		if x.Src != nil {
			return preserves.StripRemembering(x.Src)
		}
		return x.Value
	case *script.RecordExpr:
		fields, ps := values(x.Fields)
		r := preserves.NewRecord(value(x.Label), fields...)
		preserves.Remember(r, x.At, append([]preserves.Pos{x.Label.Pos()}, ps...))
		return r
	case *script.SeqExpr:
		elems, ps := values(x.Elems)
		preserves.Remember(preserves.Sequence(elems), x.At, ps)
		return preserves.Sequence(elems)
	case *script.SetExpr:
		elems, ps := values(x.Elems)
		return preserves.NewSetAt(x.At, elems, ps)
	case *script.DictExpr:
		entries := make([]preserves.DictEntry, len(x.Entries))
		kps := make([]preserves.Pos, len(x.Entries))
		vps := make([]preserves.Pos, len(x.Entries))
		for i, en := range x.Entries {
			k := value(en.Key)
			if isUnknown(k) {
				// A computed key could be any key: the dictionary's shape
				// is undecidable.
				return preserves.NewEmbedded(unknown{})
			}
			entries[i] = preserves.DictEntry{Key: k, Value: value(en.Value)}
			kps[i], vps[i] = en.Key.Pos(), en.Value.Pos()
		}
		return preserves.NewDictionaryAt(x.At, entries, kps, vps)
	}
	return preserves.NewEmbedded(unknown{})
}

func values(es []script.Expr) ([]preserves.Value, []preserves.Pos) {
	vs := make([]preserves.Value, len(es))
	ps := make([]preserves.Pos, len(es))
	for i, e := range es {
		vs[i] = value(e)
		if e != nil {
			ps[i] = e.Pos()
		}
	}
	return vs, ps
}

func isUnknown(v preserves.Value) bool { return schema.IsWildcard(v) }

package config

import (
	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/compile"
	"github.com/syndicate-go/syndicate/script/vm"
)

// The whole dependency on the script layer: compiling one file and running
// the result.

// compileScript compiles one script. On failure the error is a
// script.ErrorList holding every error with its position; a Preserves
// syntax error in it wraps a *preserves.Error, which is how apply tells a
// syntax failure (keep the old version) from compile errors (stop it).
//
// Scripts are compiled with positions: the values they assert and send
// carry their `file:line:col` (as *preserves.Annotated wrappers, which
// equality, hashing, matching and the wire encoders ignore), so that a
// service rejecting a malformed request can say where in which script it
// was made (operator issue, services spec §5.3 "Go deviation").
func compileScript(file string, src []byte) (*compile.Program, error) {
	return compile.CompileFileOptions(file, src, compile.Options{Positions: true})
}

// runScript runs prog in a fresh child facet of the active facet (the
// worker's main facet). A run-time error is logged by the VM and stops only
// that facet; the error result reports failure to create the facet.
func runScript(t *dataspace.Turn, prog *compile.Program, env map[string]preserves.Value, log zerolog.Logger) (dataspace.FacetID, error) {
	return vm.Run(t, prog, env, log)
}

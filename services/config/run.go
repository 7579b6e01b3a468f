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
func compileScript(file string, src []byte) (*compile.Program, error) {
	return compile.CompileFile(file, src)
}

// runScript runs prog in a fresh child facet of the active facet (the
// worker's main facet). A run-time error is logged by the VM and stops only
// that facet; the error result reports failure to create the facet.
func runScript(t *dataspace.Turn, prog *compile.Program, env map[string]preserves.Value, log zerolog.Logger) (dataspace.FacetID, error) {
	return vm.Run(t, prog, env, log)
}

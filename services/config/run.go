package config

import (
	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/compile"
	"github.com/syndicate-go/syndicate/script/vm"
)

// scriptRunner is the real script layer: script/compile turns the file into
// an instruction tree (every error, Preserves syntax errors included, comes
// back as a script.ErrorList with positions), and script/vm runs it in a
// fresh child facet of the worker's main facet.
type scriptRunner struct{}

func (scriptRunner) compile(file string, src []byte) (any, error) {
	prog, err := compile.CompileFile(file, src)
	if err != nil {
		return nil, err
	}
	return prog, nil
}

func (scriptRunner) run(t *dataspace.Turn, prog any, env map[string]preserves.Value, log zerolog.Logger) (dataspace.FacetID, error) {
	return vm.Run(t, prog.(*compile.Program), env, log)
}

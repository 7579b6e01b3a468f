package config

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// A malformed request made by a script carries its position: the warning
// names it, and the failed state is asserted under the plain name (the
// position is not part of the value's identity).
func TestMalformedRequestFromScriptNamesPosition(t *testing.T) {
	w := newWorld(t, testOptions())
	plain := preserves.Rec("config-watcher", preserves.Int(42), preserves.NewDictionary())
	at := preserves.Pos{File: "/etc/syndicate/boot.pr", Line: 7, Col: 18}
	preserves.Remember(plain, at, nil) // as a script compiled with positions does
	w.run(plain)
	w.waitHas(stateText(plain, "failed"))
	w.waitLog(`"pos":"/etc/syndicate/boot.pr:7:18"`)
	w.waitLog(`"service":"<config-watcher 42 {}>"`)
}

// Scripts are compiled with positions, so what they assert carries them.
func TestScriptsCompiledWithPositions(t *testing.T) {
	prog, err := compileScript("/x/a.pr", []byte("\n  <a 1>"))
	if err != nil {
		t.Fatal(err)
	}
	if !prog.Positions {
		t.Error("scripts are compiled without positions")
	}
}

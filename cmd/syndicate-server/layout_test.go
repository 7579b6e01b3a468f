package main

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/syndicate-go/syndicate"

// TestImportDirection enforces the one-way layering of the module: a wrong
// import fails CI rather than waiting for a reviewer to notice it.
func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rel := func(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }
	under := func(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := rel(fields[0])
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := rel(imp)
			checked++
			var why string
			switch {
			case under(dep, "cmd"):
				why = "nothing imports cmd/"
			case under(pkg, "preserves") && !under(dep, "preserves"):
				why = "preserves imports nothing else of ours"
			case under(pkg, "preserves") && pkg != "preserves/testutil" && dep == "preserves/testutil":
				why = "only tests import preserves/testutil"
			case under(pkg, "dataspace") && (under(dep, "script") || under(dep, "services")):
				why = "dataspace builds on preserves only"
			case (pkg == "dataspace/pattern" || pkg == "dataspace/caveat") && dep != "preserves" && dep != "preserves/schema" && !under(dep, "dataspace/schemas"):
				// The generated schema packages import only preserves and
				// preserves/schema (their run-time support); they give
				// pattern and caveat their labels, caveat its parsers.
				why = "pattern and caveat are leaves over preserves and the generated schemas"
			case pkg == "dataspace/index" && dep != "preserves" && dep != "dataspace/pattern":
				why = "the index is a pure structure over preserves and patterns"
			case (pkg == "script" || under(pkg, "script/compile")) && (dep == "dataspace" || under(dep, "dataspace/relay") || under(dep, "services")):
				why = "the script front end and compiler do not depend on the runtime"
			case under(pkg, "script") && under(dep, "services"):
				why = "script does not depend on services"
			case serviceOf(pkg) != "" && serviceOf(dep) != "" && serviceOf(pkg) != serviceOf(dep):
				why = "sibling services coordinate through the dataspace, not imports"
			}
			if why != "" {
				t.Errorf("%s imports %s: %s", pkg, dep, why)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no internal imports seen: is go list working?")
	}
}

// serviceOf is the service a package belongs to ("admin" for
// services/admin/status), or "" outside services/… (the framework package
// services itself belongs to every service).
func serviceOf(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, "services/")
	if !ok {
		return ""
	}
	top, _, _ := strings.Cut(rest, "/")
	return top
}

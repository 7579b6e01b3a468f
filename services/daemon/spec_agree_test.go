package daemon

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/validate"
)

// agreeSpecs are daemon specs, good and bad, in script syntax.
var agreeSpecs = []string{
	// good
	`"echo hi"`,
	`["/bin/tool" "-v"]`,
	`<one-shot "mkdir -p /tmp/x">`,
	`<one-shot ["true"] 1>`,
	`{argv: "x", dir: "/srv", clearEnv: #t, env: {PORT: "1", "GONE": #f}, readyOnStart: #f}`,
	`{argv: "x", restart: on-error, protocol: text/syndicate, stopTimeout: 0.5}`,
	`{argv: "x", restartDelay: 1, restartMaxDelay: 8, restartLimit: 3, restartWindow: 60}`,
	`{argv: "x", readiness: sd-notify, watchdog: 2, readyTimeout: 0}`,
	`{argv: "x", readiness: <tcp "::1" 80>}`,
	`{argv: "x", readiness: <unix "/run/x.sock">}`,
	`{argv: "x", restat: always}`,
	// not a spec
	`42`,
	`[]`,
	`["x" 1]`,
	`[#t]`,
	`<two-shot "x">`,
	`<one-shot>`,
	`<one-shot []>`,
	`{dir: "/"}`,
	`{argv: []}`,
	`{argv: 7, restart: sometimes}`,
	// invalid fields
	`{argv: "x", dir: 42}`,
	`{argv: "x", clearEnv: "no"}`,
	`{argv: "x", env: "PORT=1"}`,
	`{argv: "x", env: {1: "x"}}`,
	`{argv: "x", env: {"BAD=INJECT": "x"}}`,
	`{argv: "x", env: {"": "x"}}`,
	`{argv: "x", env: {A: #t}}`,
	`{argv: "x", readyOnStart: 1}`,
	`{argv: "x", restart: sometimes}`,
	`{argv: "x", protocol: http}`,
	`{argv: "x", stopTimeout: -1}`,
	`{argv: "x", restartLimit: 1.5}`,
	`{argv: "x", restartWindow: #t}`,
	`{argv: "x", readiness: systemd}`,
	`{argv: "x", readiness: <notification-fd 2>}`,
	`{argv: "x", readiness: <tcp 70000>}`,
	`{argv: "x", readiness: <tcp "" 80>}`,
	`{argv: "x", readiness: <unix "">}`,
	`{argv: "x", readiness: sd-notify, readyOnStart: #t}`,
	`{argv: "x", readiness: <tcp 1>, watchdog: 1}`,
	`{argv: "x", readiness: sd-notify, watchdog: 0}`,
	`{argv: "x", watchdog: 1}`,
	`{argv: "x", restat: always, dir: 1}`,
}

// TestRuntimeAndCheckAgree runs every spec of agreeSpecs through the
// run-time path (a script compiled with positions asserts it; the daemon
// service's ParseSpec elaborates what reaches the dataspace) and through
// `--check` (validate.Source on the same script): same verdict, and the
// run-time error is among the check's, with its class, position and
// message. Unknown keys are warnings at run time and errors for --check.
func TestRuntimeAndCheckAgree(t *testing.T) {
	parallel(t)
	var src strings.Builder
	for i, s := range agreeSpecs {
		fmt.Fprintf(&src, "<daemon a%d %s>\n", i, s)
	}
	const file = "/etc/syndicate/agree.pr"

	checked := map[int][]*script.Error{} // by line
	for _, e := range validate.Source(file, []byte(src.String())) {
		checked[e.Pos.Line] = append(checked[e.Pos.Line], e)
	}

	h := newHarness(t)
	h.runScript(file, src.String())
	asserted := func() map[string]*preserves.Record {
		out := map[string]*preserves.Record{}
		for _, v := range h.rec.Present() {
			if r, ok := v.(*preserves.Record); ok && preserves.Equal(r.Label, preserves.Symbol("daemon")) && len(r.Fields) == 2 {
				out[preserves.FormatText(r.Fields[0])] = r
			}
		}
		return out
	}
	testutil.WaitFor(t, "the script's daemon specs", func() bool { return len(asserted()) == len(agreeSpecs) })
	specs := asserted()

	for i, text := range agreeSpecs {
		line := i + 1
		// As the worker parses it: the spec, at the place its
		// declaration remembers for it.
		decl := specs[fmt.Sprintf("a%d", i)]
		spec, err := ParseSpecAt(decl.Fields[1], preserves.FieldPos(decl, 1))
		var errs, unknown []*script.Error
		for _, e := range checked[line] {
			if errors.Is(e, externalservices.ErrUnknownKey) {
				unknown = append(unknown, e)
			} else {
				errs = append(errs, e)
			}
		}
		if err == nil {
			if len(errs) > 0 {
				t.Errorf("line %d %s: the runtime accepts it, --check says %v", line, text, errs)
				continue
			}
			if len(unknown) != len(spec.Unknown) {
				t.Errorf("line %d %s: runtime warns %q, --check says %v", line, text, spec.Unknown, unknown)
			}
			for j, e := range unknown {
				if j < len(spec.Unknown) && e.Msg != spec.Unknown[j] {
					t.Errorf("line %d: unknown key: runtime %q, --check %q", line, spec.Unknown[j], e.Msg)
				}
			}
			continue
		}
		class := ErrInvalidField
		if errors.Is(err, ErrNotASpec) {
			class = ErrNotASpec
		}
		found := false
		for _, e := range errs {
			found = found || (errors.Is(e, class) && e.Error() == err.Error())
		}
		if !found {
			t.Errorf("line %d %s: runtime error %v (%v) is not among --check's %v", line, text, err, class, errs)
		}
		if !strings.HasPrefix(err.Error(), fmt.Sprintf("%s:%d:", file, line)) {
			t.Errorf("line %d: runtime error %q lacks its position", line, err)
		}
	}
}

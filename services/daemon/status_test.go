package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// info returns the merged <service-info <daemon id> …> assertions present.
func (h *harness) info(id string) (services.Info, bool) {
	var parts []services.Info
	for _, v := range h.rec.Present() {
		r, ok := v.(*preserves.Record)
		if ok && r.Label == services.LabelServiceInfo && len(r.Fields) == 2 && preserves.Equal(r.Fields[0], dname(id)) {
			parts = append(parts, services.ParseInfo(r.Fields[1]))
		}
	}
	return services.MergeInfo(parts...), len(parts) > 0
}

func (h *harness) waitInfo(t *testing.T, id string, cond func(services.Info) bool, what string) services.Info {
	t.Helper()
	var got services.Info
	eventually(t, func() bool {
		var ok bool
		got, ok = h.info(id)
		return ok && cond(got)
	}, "%s: info %+v", what, got)
	return got
}

func TestSpawnCauses(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		argv  []string
		dir   string
		cause error
		text  string
	}{
		{[]string{"/nonexistent/prog"}, "", ErrProgramMissing, "program not found: /nonexistent/prog"},
		{[]string{"no-such-program-xyz"}, "", ErrProgramMissing, "program not found: no-such-program-xyz (searched in $PATH)"},
		{[]string{plain}, "", ErrNotExecutable, "program is not executable: " + plain},
		{[]string{dir}, "", ErrNotExecutable, "program is not executable: " + dir},
		{[]string{"/bin/sh"}, filepath.Join(dir, "gone"), ErrDirMissing, "working directory does not exist: " + filepath.Join(dir, "gone")},
	}
	for _, c := range cases {
		s := &Spec{Argv: c.argv, Dir: c.dir, StopTimeout: DefaultStopTimeout}
		var wg sync.WaitGroup
		e := runProcess(context.Background(), s, procHooks{}, RealClock, &wg)
		wg.Wait()
		if !errors.Is(e.SpawnErr, c.cause) || e.String() != c.text {
			t.Errorf("%v in %q: %v, want %q (%v)", c.argv, c.dir, e.SpawnErr, c.text, c.cause)
		}
	}
}

func TestStatusCannotStart(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `{argv: ["/bin/true"], dir: "/nonexistent-dir"}`))
	h.waitHas(state("d", services.StateFailed), true)
	i := h.waitInfo(t, "d", func(i services.Info) bool { return i.Phase == services.PhaseCannotStart }, "cannot-start")
	if len(i.Reasons) != 1 || i.Reasons[0] != "cannot start: working directory does not exist: /nonexistent-dir" {
		t.Errorf("reasons %q", i.Reasons)
	}
	if i.Exit == "" || i.ExitAt.IsZero() {
		t.Errorf("no last exit: %+v", i)
	}
}

func TestStatusRestartsAndLastExit(t *testing.T) {
	parallel(t)
	h, _ := bootDaemonsQuick(t, Options{})
	require(h, "d", pv(t, `"echo $$; exit 3"`))
	i := h.waitInfo(t, "d", func(i services.Info) bool { return i.Restarts >= 2 }, "two restarts")
	if i.Exit != "exit status: 3" || i.Recent < 2 {
		t.Errorf("info %+v", i)
	}
}

func TestStatusGaveUp(t *testing.T) {
	parallel(t)
	h, _ := bootDaemonsQuick(t, Options{})
	require(h, "d", pv(t, `{argv: "exit 1", restartLimit: 1, restartWindow: 60}`))
	h.waitHas(state("d", services.StateFailed), true)
	i := h.waitInfo(t, "d", func(i services.Info) bool { return i.Phase == services.PhaseGaveUp }, "gave up")
	if len(i.Reasons) != 1 || !strings.HasPrefix(i.Reasons[0], "restart limit reached (1 restarts within 1m0s); last exit: exit status: 1") {
		t.Errorf("reasons %q", i.Reasons)
	}
}

func TestStatusInvalidSpecReasonHasPosition(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	spec, err := preserves.ParseTextOptions([]byte(`{argv: []}`), preserves.TextOptions{Positions: true, File: "x.pr"})
	if err != nil {
		t.Fatal(err)
	}
	require(h, "d", spec)
	i := h.waitInfo(t, "d", func(i services.Info) bool { return len(i.Reasons) > 0 }, "reason")
	if i.Pos != "x.pr:1:1" || !strings.HasPrefix(i.Reasons[0], "invalid process specification") {
		t.Errorf("info %+v", i)
	}
}

func TestHistoryTail(t *testing.T) {
	parallel(t)
	h := newHistory()
	for i := 0; i < TailLines+5; i++ {
		h.line(Line{Text: []byte(fmt.Sprintf("l%d\n", i))})
	}
	got := h.lastLines()
	if len(got) != TailLines || string(got[0].Text) != "l5\n" || string(got[TailLines-1].Text) != fmt.Sprintf("l%d\n", TailLines+4) {
		t.Errorf("tail %q…%q (%d)", got[0].Text, got[len(got)-1].Text, len(got))
	}
}

func TestOutputRequest(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `"echo one; echo two >&2; exec sleep 100"`))
	h.waitOutput("d", 2)
	h.assert(OutputRequest(dname("d")))
	want := preserves.NewRecord(syndicatego.LabelServiceOutput, dname("d"), nil)
	eventually(t, func() bool {
		for _, v := range h.rec.Present() {
			if r, ok := v.(*preserves.Record); ok && r.Label == want.Label && len(r.Fields) == 2 {
				text := preserves.FormatText(r.Fields[1])
				return strings.Contains(text, `line: "one"`) && strings.Contains(text, `stream: stderr`)
			}
		}
		return false
	}, "service-output with both lines")
}

// TestUnknownKeysWarnedAtRunTime: misspelt keys are ignored (reference
// semantics) but logged and shown as status reasons.
func TestUnknownKeysWarnedAtRunTime(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `{argv: "exec sleep 100", restat: always}`))
	h.waitHas(state("d", services.StateReady), true)
	i := h.waitInfo(t, "d", func(i services.Info) bool { return len(i.Reasons) > 0 }, "reason")
	if i.Reasons[0] != "unknown key restat in a daemon spec (did you mean restart?)" {
		t.Errorf("reasons %q", i.Reasons)
	}
	if !h.warns.Has("unknown key restat") {
		t.Errorf("not logged: %q", h.warns.Lines())
	}
}

// TestEnvNameWithEqualsRejected: "BAD=INJECT" never reaches the child.
func TestEnvNameWithEqualsRejected(t *testing.T) {
	parallel(t)
	for _, src := range []string{`{argv: "env", env: {"BAD=INJECT": "x"}}`, `{argv: "env", env: {"": "x"}}`} {
		if _, err := ParseSpec(pv(t, src)); !errors.Is(err, ErrInvalidField) {
			t.Errorf("%s: %v", src, err)
		}
	}
}

// TestUndeclaredDaemonReason: a required daemon with no declaration is
// ready (reference semantics), but warned about and given a reason after
// the grace period.
func TestUndeclaredDaemonReason(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	h.assert(services.RequireService(dname("postgress")))
	h.waitHas(state("postgress", services.StateReady), true)
	i := h.waitInfo(t, "postgress", func(i services.Info) bool { return len(i.Reasons) > 0 }, "reason")
	if i.Reasons[0] != "no <daemon postgress …> declaration: ready with no process" {
		t.Errorf("reasons %q", i.Reasons)
	}
	if !h.warns.Has("no <daemon postgress …> declaration") {
		t.Errorf("not logged: %q", h.warns.Lines())
	}
}

// TestDuplicateDeclarationReason: one daemon declared in two files.
func TestDuplicateDeclarationReason(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	at := func(file, src string) preserves.Value {
		v, err := preserves.ParseTextOptions([]byte(src), preserves.TextOptions{Positions: true, File: file})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	require(h, "dup", at("a.pr", `"exec sleep 100"`), at("b.pr", `"exec sleep 101"`))
	i := h.waitInfo(t, "dup", func(i services.Info) bool { return len(i.Reasons) > 0 }, "reason")
	if i.Reasons[0] != "declared in several files (a.pr:1:1, b.pr:1:1): each declaration runs a process of its own" {
		t.Errorf("reasons %q", i.Reasons)
	}
}

func TestHistoryTailBoundsLines(t *testing.T) {
	parallel(t)
	h := newHistory()
	h.line(Line{Text: make([]byte, 1<<20)})
	if got := len(h.lastLines()[0].Text); got > tailLineMax+len("…") {
		t.Errorf("kept %d bytes of a 1 MiB line", got)
	}
}

package main

import (
	"math/big"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

// TestHostileValuesShortLogLines (issue 12, budgets: "error messages never
// format a huge value in full"): malformed declarations holding an integer
// of a million digits, a 1 MiB string or a 1 MiB symbol are warned about,
// refused or answered with `<error …>`, and every record the server logs
// names the value in at most preserves.ShowLimit bytes. Formatting such an
// integer in decimal costs CPU superlinear in its size (15 s for 8 MB); a
// record cut short shows that none was formatted in full.
func TestHostileValuesShortLogLines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a full server")
	}
	h := startInproc(t)
	h.log.keepWarnings()
	huge := preserves.NewBigInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(1_000_000), nil))
	long := preserves.String(strings.Repeat("s", 1<<20))
	longSym := preserves.Symbol(strings.Repeat("k", 1<<20))
	sym := func(s string) preserves.Value { return preserves.Symbol(s) }
	daemon := func(id string) preserves.Value { return rec("daemon", sym(id)) }
	refused := rec("resolve-path", rec("route", preserves.Sequence{},
		rec("ref", preserves.Dict(sym("oid"), long, sym("x"), preserves.NewSet(huge)))))
	answers := dataspacetest.NewRecorder()
	h.driver.Activate(func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		cfg := h.s.env.Config
		t.Assert(cfg, dataspace.Observe(pattern.Rec(sym("a"), pattern.Capture(), pattern.Capture()), t.Create(answers)))
		for _, v := range []preserves.Value{
			services.RequireService(daemon("hostile-int")),
			rec("daemon", sym("hostile-int"), huge),
			services.RequireService(daemon("hostile-key")),
			rec("daemon", sym("hostile-key"), preserves.Dict(sym("argv"), preserves.String("true"), longSym, preserves.Int(1))),
			services.RequireService(daemon("hostile-env")),
			rec("daemon", sym("hostile-env"), preserves.Dict(sym("argv"), preserves.String("true"),
				sym("env"), preserves.Dict(long+"=", preserves.String("v")))),
			services.RequireService(daemon("hostile-dep")),
			rec("depends-on", daemon("hostile-dep"), huge),
			rec("run-service", rec("debt-reporter", huge)),
			rec("q", rec("resolve-path", huge)),
			rec("q", refused),
			rec("bind", rec("ref", preserves.Dict(sym("oid"), preserves.String("hostile"), sym("key"), preserves.ByteStringFrom([]byte("k")))), dataspace.Embed(h.sink), huge),
			rec("bind", rec("ref", preserves.Dict(sym("oid"), long, sym("key"), preserves.ByteStringFrom([]byte("k")))), dataspace.Embed(h.sink), preserves.Bool(false)),
		} {
			t.Assert(cfg, v)
		}
		t.Assert(h.s.env.Gatekeeper, rec("resolve", rec("ref", preserves.Dict(sym("oid"), long, sym("sig"), preserves.ByteStringFrom(make([]byte, 16)))), dataspace.Embed(t.Create(dataspacetest.NewRecorder()))))
		return nil
	})
	for _, msg := range []string{
		"invalid process specification",
		"unknown key",
		"contains '='",
		"cannot deduce dependee service name",
		"debt reporter: malformed",
		"resolve-path: malformed route ignored",
		"resolve-path: route refused",
		"gatekeeper: malformed bind",
		"gatekeeper: sturdy ref failed validation",
	} {
		testutil.WaitFor(t, "a record with "+msg, func() bool { return h.log.has(msg) })
	}
	var answer string
	testutil.WaitFor(t, "the <error …> answer", func() bool {
		return answers.Find(func(v preserves.Value) bool {
			caps, _ := preserves.Unwrap(v).(preserves.Sequence)
			if len(caps) != 2 || !preserves.Equal(caps[0], refused) {
				return false
			}
			r, ok := preserves.Unwrap(caps[1]).(*preserves.Record)
			if ok && r.Label == sym("error") && len(r.Fields) == 1 {
				s, _ := r.Fields[0].(preserves.String)
				answer = string(s)
			}
			return ok
		})
	})
	if !strings.Contains(answer, "cannot be resolved") || len(answer) > 2*preserves.ShowLimit {
		t.Errorf("the <error …> answer is %d bytes: %.300q", len(answer), answer)
	}
	h.roundTrips(t)
	h.checkAlive(t, "hostile declarations")
	// A record holds a few fields of at most ShowLimit bytes each.
	if n, head := h.log.longestRecord(); n > 8*preserves.ShowLimit {
		t.Errorf("the longest log record is %d bytes: %s…", n, head)
	}
}

package gatekeeper

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

// Every malformed <gatekeeper …> request is a warning naming it (with the
// script position when it has one) and a failed state under the plain
// name.
func TestMalformedRequestsWarnWithPosition(t *testing.T) {
	w := newWorld(t)
	mirror := newBox()
	logs := &testutil.Buffer{}
	at := preserves.Pos{File: "/etc/syndicate/gk.pr", Line: 3, Col: 18}
	bad := []preserves.Value{
		preserves.NewRecord(internalservices.LabelGatekeeper),
		preserves.NewRecord(internalservices.LabelGatekeeper, preserves.Int(1)),
		preserves.NewRecord(internalservices.LabelGatekeeper, dataspace.Embed(w.bs), dataspace.Embed(w.bs)),
	}
	w.do(func(t *dataspace.Turn) {
		cfg := t.Create(dataspace.NewDataspace())
		m := t.Create(mirror)
		t.During(cfg, pattern.Capture(), func(t *dataspace.Turn, caps []preserves.Value) error {
			t.Assert(m, caps[0])
			return nil
		})
		if err := Boot(t, services.Env{Config: cfg, Logger: zerolog.New(logs)}); err != nil {
			panic(err)
		}
		for _, v := range bad {
			preserves.Remember(v, at, nil) // as a script compiled with positions does
			t.Assert(cfg, services.RunService(v))
		}
	})
	for _, v := range bad {
		want := services.ServiceState(v, services.StateFailed)
		waitFor(t, "failed "+preserves.FormatText(v), func() bool {
			for _, x := range mirror.all() {
				if preserves.Equal(x, want) {
					return true
				}
			}
			return false
		})
	}
	waitFor(t, "warnings", func() bool {
		return strings.Count(logs.String(), `"pos":"/etc/syndicate/gk.pr:3:18"`) == len(bad) &&
			strings.Contains(logs.String(), `"service":"<gatekeeper 1>"`)
	})
}

package services

import (
	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
)

// BootDependencies starts the dependency tracker of §2.2 in the active
// facet: during each distinct `<require-service NAME>` in env.Config, a
// tracker facet asserts `<run-service NAME>` exactly while its obstacle
// count is zero.
//
// The spec describes one tracker actor per NAME; a facet per NAME in this
// actor behaves identically (everything it asserts vanishes when the
// requirement does) and costs far less with thousands of services.
func BootDependencies(t *dataspace.Turn, env Env) {
	st := &stops{count: map[string]int{}, trackers: map[string]func(*dataspace.Turn, int){}}
	// An operator's stop (override.go) is one more obstacle of its
	// service's tracker: one observer for all of them, rather than one
	// per requirement.
	stopPat := pattern.Rec(syndicatego.LabelServiceStopped, pattern.Capture(), pattern.Discard{})
	t.During(env.Config, stopPat, func(t *dataspace.Turn, caps []preserves.Value) error {
		k := overrideKey(caps[0])
		st.add(t, k, +1)
		t.OnStop(func(t *dataspace.Turn) error { st.add(t, k, -1); return nil })
		return nil
	})
	p := pattern.Rec(service.LabelRequireService, pattern.Capture())
	t.During(env.Config, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		trackDependencies(t, env, caps[0], st)
		return nil
	})
}

// stops counts the operator's stops by service, and tells the trackers
// when one begins or ends. The tracker's actor owns it.
type stops struct {
	count    map[string]int
	trackers map[string]func(t *dataspace.Turn, d int) // key → its tracker's obstacle change
}

func (s *stops) add(t *dataspace.Turn, k string, d int) {
	before := s.count[k] > 0
	Count(s.count, k, d)
	after := s.count[k] > 0
	change := s.trackers[k]
	switch {
	case change == nil || after == before:
	case after:
		change(t, +1)
	default:
		change(t, -1)
	}
}

// trackDependencies runs in the facet of one requirement.
func trackDependencies(t *dataspace.Turn, env Env, name preserves.Value, st *stops) {
	obstacles := 1 // the initial obstacle, removed after the first sync
	var run dataspace.Handle
	rec := NewReconciler(t, func(t *dataspace.Turn) error {
		switch {
		case obstacles == 0 && run == 0:
			// name is passed on as requested: when a script asked, it
			// carries the script position, which the service reports if
			// it rejects the name (equality ignores it).
			run = t.Assert(env.Config, RunService(name))
		case obstacles != 0 && run != 0:
			t.Retract(run)
			run = 0
		}
		return nil
	})
	change := func(t *dataspace.Turn, d int) {
		obstacles += d
		rec.Kick(t)
	}

	depPat := pattern.Rec(service.LabelDependsOn, Literal(name), pattern.Capture())
	t.During(env.Config, depPat, func(t *dataspace.Turn, caps []preserves.Value) error {
		dep := caps[0]
		if depName, ok := dependeeName(dep); ok {
			t.Assert(env.Config, RequireService(depName))
		} else {
			env.Logger.Warn().Str("service", preserves.Show(name)).Str("dependee", preserves.Show(dep)).
				Msg("cannot deduce dependee service name")
		}
		change(t, +1)
		t.OnStop(func(t *dataspace.Turn) error { change(t, -1); return nil })
		awaited, err := pattern.Lift(dep)
		if err != nil {
			// A set cannot be a dataspace pattern: the obstacle stays.
			env.Logger.Warn().Str("service", preserves.Show(name)).Str("dependee", preserves.Show(dep)).Err(err).
				Msg("dependee cannot be observed")
			return nil
		}
		// Several matching assertions yield one (empty) capture tuple,
		// so they count once.
		t.During(env.Config, awaited, func(t *dataspace.Turn, _ []preserves.Value) error {
			change(t, -1)
			t.OnStop(func(t *dataspace.Turn) error { change(t, +1); return nil })
			return nil
		})
		return nil
	})
	k := overrideKey(name)
	if st.count[k] > 0 {
		obstacles++
	}
	st.trackers[k] = change
	t.OnStop(func(*dataspace.Turn) error { delete(st.trackers, k); return nil })
	t.Sync(env.Config, func(t *dataspace.Turn) error {
		change(t, -1)
		return nil
	})
}

// dependeeName extracts DEPNAME from `<service-state DEPNAME _>`.
func dependeeName(dep preserves.Value) (preserves.Value, bool) {
	r, ok := dep.(*preserves.Record)
	if !ok || r.Label != service.LabelServiceState || len(r.Fields) < 2 {
		return nil, false
	}
	return r.Fields[0], true
}

// Literal is the pattern matching v field by field (extensibly), or
// exactly when v cannot be lifted (it contains a set).
func Literal(v preserves.Value) pattern.Pattern {
	if p, err := pattern.Lift(v); err == nil {
		return p
	}
	return pattern.Lit{Value: v}
}

package trace

import (
	"errors"
	"fmt"
	"math"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/protocol"
	traceschema "github.com/syndicate-go/syndicate/dataspace/schemas/trace"
	"github.com/syndicate-go/syndicate/preserves"
)

// Entry renders r as a trace.prs TraceEntry:
// `<trace TIMESTAMP ACTOR-ID ACTIVATION>`. Embedded values inside
// assertions and messages become descriptive strings (services spec §1.6),
// so the result holds no embedded value and reads back as itself.
func Entry(r *dataspace.TraceRecord) preserves.Value {
	ts := float64(r.Time.UnixNano()) / 1e9
	var item preserves.Value
	switch r.Kind {
	case dataspace.TraceKindStart:
		item = preserves.NewRecord(traceschema.LabelStart, actorName(r.Name))
	case dataspace.TraceKindTurn:
		item = turn(r.Turn, r.Actor)
	default:
		item = preserves.NewRecord(traceschema.LabelStop, exitStatus(r.Status, r.Err))
	}
	return preserves.NewRecord(traceschema.LabelTrace, preserves.NewDouble(ts), id(r.Actor), item)
}

func id(n uint64) preserves.Value {
	if n > math.MaxInt64 {
		return preserves.String(fmt.Sprint(n)) // never happens: ids count up from 1
	}
	return preserves.Int(n)
}

func actorName(name string) preserves.Value {
	if name == "" {
		return preserves.NewRecord(traceschema.LabelAnonymous)
	}
	return preserves.NewRecord(traceschema.LabelNamed, preserves.String(name))
}

// exitStatus is `ok` or protocol.prs `<error MESSAGE DETAIL>`; the detail
// of a panic is the panic value's text, otherwise #f.
// symOK is trace.prs ExitStatus `ok`.
var symOK = traceschema.ExitStatusOk{}.ToValue()

func exitStatus(status dataspace.ExitStatus, err error) preserves.Value {
	if status != dataspace.Failed || err == nil {
		return symOK
	}
	var detail preserves.Value = preserves.Bool(false)
	var pe *dataspace.PanicError
	if errors.As(err, &pe) {
		detail = preserves.String(fmt.Sprint(pe.Value))
	}
	return preserves.NewRecord(protocol.LabelError, preserves.String(err.Error()), detail)
}

func turn(t *dataspace.TraceTurn, actor uint64) preserves.Value {
	if t == nil {
		return preserves.NewRecord(traceschema.LabelTurn, preserves.Int(0), cause(dataspace.TraceCause{}), preserves.Sequence{})
	}
	acts := make(preserves.Sequence, len(t.Actions))
	for i := range t.Actions {
		acts[i] = action(&t.Actions[i], actor)
	}
	return preserves.NewRecord(traceschema.LabelTurn, id(t.ID), cause(t.Cause), acts)
}

func cause(c dataspace.TraceCause) preserves.Value {
	switch c.Kind {
	case dataspace.CauseTurn:
		return preserves.NewRecord(traceschema.LabelCausedBy, id(c.Turn))
	case dataspace.CauseCleanup:
		return preserves.NewRecord(traceschema.LabelCleanup)
	case dataspace.CauseTaskRelease:
		return preserves.NewRecord(traceschema.LabelLinkedTaskRelease, id(c.Task), traceschema.LinkedTaskReleaseReasonNormal.ToValue())
	case dataspace.CauseDelay:
		return preserves.NewRecord(traceschema.LabelDelay, id(c.Turn), preserves.NewDouble(c.Period.Seconds()))
	case dataspace.CausePeriodic:
		return preserves.NewRecord(traceschema.LabelPeriodicActivation, preserves.NewDouble(c.Period.Seconds()))
	}
	desc := c.Description
	if desc == "" {
		desc = "unknown"
	}
	return preserves.NewRecord(traceschema.LabelExternal, preserves.String(desc))
}

func target(t dataspace.TraceTarget) preserves.Value {
	return preserves.NewRecord(traceschema.LabelEntity, id(t.Actor), id(uint64(t.Facet)), id(t.OID))
}

// body is an AssertionDescription: the value, or opaque for the
// runtime's internal continuations (which carry none).
func body(v preserves.Value) preserves.Value {
	if v == nil {
		return preserves.NewRecord(traceschema.LabelOpaque, preserves.String("internal continuation"))
	}
	return preserves.NewRecord(traceschema.LabelValue, Describe(v))
}

func event(a *dataspace.TraceAction) preserves.Value {
	var detail preserves.Value
	switch a.Event {
	case dataspace.TraceAssert:
		detail = preserves.NewRecord(traceschema.LabelAssert, body(a.Value), id(uint64(a.Handle)))
	case dataspace.TraceRetract:
		detail = preserves.NewRecord(traceschema.LabelRetract, id(uint64(a.Handle)))
	case dataspace.TraceMessage:
		detail = preserves.NewRecord(traceschema.LabelMessage, body(a.Value))
	default:
		detail = preserves.NewRecord(traceschema.LabelSync, target(a.Peer))
	}
	return preserves.NewRecord(traceschema.LabelEvent, target(a.Target), detail)
}

func path(p []dataspace.FacetID) preserves.Value {
	s := make(preserves.Sequence, len(p))
	for i, f := range p {
		s[i] = id(uint64(f))
	}
	return s
}

// action renders one ActionDescription of a turn of actor.
func action(a *dataspace.TraceAction, actor uint64) preserves.Value {
	switch a.Kind {
	case dataspace.ActDequeue:
		return preserves.NewRecord(traceschema.LabelDequeue, event(a))
	case dataspace.ActEnqueue:
		return preserves.NewRecord(traceschema.LabelEnqueue, event(a))
	case dataspace.ActDequeueInternal:
		return preserves.NewRecord(traceschema.LabelDequeueInternal, event(a))
	case dataspace.ActEnqueueInternal:
		return preserves.NewRecord(traceschema.LabelEnqueueInternal, event(a))
	case dataspace.ActSpawn:
		return preserves.NewRecord(traceschema.LabelSpawn, preserves.Bool(a.Link), id(a.Child))
	case dataspace.ActLink:
		return preserves.NewRecord(traceschema.LabelLink, id(actor), id(uint64(a.ChildToParent)), id(a.Child), id(uint64(a.ParentToChild)))
	case dataspace.ActFacetStart:
		return preserves.NewRecord(traceschema.LabelFacetStart, path(a.Path))
	case dataspace.ActFacetStop:
		return preserves.NewRecord(traceschema.LabelFacetStop, path(a.Path), stopReason(a.Reason))
	case dataspace.ActLinkedTaskStart:
		return preserves.NewRecord(traceschema.LabelLinkedTaskStart, actorName(a.TaskName), id(a.Task))
	}
	return preserves.NewRecord(traceschema.LabelOpaque, preserves.String(fmt.Sprintf("action %d", a.Kind)))
}

func stopReason(r dataspace.FacetStopReason) preserves.Value {
	switch r {
	case dataspace.StopInert:
		return traceschema.FacetStopReasonInert.ToValue()
	case dataspace.StopParent:
		return traceschema.FacetStopReasonParentStopping.ToValue()
	case dataspace.StopActor:
		return traceschema.FacetStopReasonActorStopping.ToValue()
	}
	return traceschema.FacetStopReasonExplicitAction.ToValue()
}

// Describe returns v with annotations dropped and every embedded value
// replaced by a descriptive string (a capability's Ref.String,
// `ref<actor/oid>`). Values without embedded parts come back as they are.
func Describe(v preserves.Value) preserves.Value {
	out, _ := describe(v)
	return out
}

// describe reports whether it changed anything, so that unchanged
// compounds are shared rather than copied.
func describe(v preserves.Value) (preserves.Value, bool) {
	switch x := v.(type) {
	case *preserves.Annotated:
		out, _ := describe(x.Item)
		return out, true
	case *preserves.Embedded:
		if s, ok := x.Payload.(fmt.Stringer); ok {
			return preserves.String(s.String()), true
		}
		if pv, ok := x.Payload.(preserves.Value); ok {
			return preserves.String("embedded<" + preserves.FormatText(Describe(pv)) + ">"), true
		}
		return preserves.String(fmt.Sprintf("embedded<%T>", x.Payload)), true
	case *preserves.Record:
		label, lc := describe(x.Label)
		fields, fc := describeSlice(x.Fields)
		if !lc && !fc {
			return v, false
		}
		return preserves.NewRecord(label, fields...), true
	case preserves.Sequence:
		items, c := describeSlice(x)
		if !c {
			return v, false
		}
		return preserves.Sequence(items), true
	case *preserves.Set:
		items, c := describeSlice(x.Elems())
		if !c {
			return v, false
		}
		return preserves.NewSet(items...), true
	case *preserves.Dictionary:
		es := x.Entries()
		var out []preserves.DictEntry
		for i, e := range es {
			k, kc := describe(e.Key)
			val, vc := describe(e.Value)
			if (kc || vc) && out == nil {
				out = make([]preserves.DictEntry, i, len(es))
				copy(out, es[:i])
			}
			if out != nil {
				out = append(out, preserves.DictEntry{Key: k, Value: val})
			}
		}
		if out == nil {
			return v, false
		}
		return preserves.NewDictionary(out...), true
	}
	return v, false
}

func describeSlice(vs []preserves.Value) ([]preserves.Value, bool) {
	var out []preserves.Value
	for i, v := range vs {
		d, c := describe(v)
		if c && out == nil {
			out = make([]preserves.Value, i, len(vs))
			copy(out, vs[:i])
		}
		if out != nil {
			out = append(out, d)
		}
	}
	if out == nil {
		return vs, false
	}
	return out, true
}

package client

import (
	"context"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	"github.com/syndicate-go/syndicate/dataspace/schemas/rpc"
	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/preserves"
)

// ResolveIn asserts `<resolve STEP #:k>` to gk from the active facet and
// calls done (in a turn of this actor, with the active facet) with the
// first answer: the capability of `<ok #:cap>`, or a *ResolveError for
// `<error …>`. step is a gatekeeper Step such as a sturdy ref
// `<ref {oid: … sig: …}>`. The resolve assertion stays up for as long as
// the active facet lives: the answer (and the remote pins keeping the
// capability alive) go away when it is retracted.
func ResolveIn(t *dataspace.Turn, gk *dataspace.Ref, step preserves.Value, done func(t *dataspace.Turn, cap *dataspace.Ref, err error)) dataspace.Handle {
	k := &answer{done: done}
	return t.Assert(gk, preserves.NewRecord(gatekeeper.LabelResolve, step, dataspace.Embed(t.Create(k))))
}

type answer struct {
	dataspace.BaseEntity
	done func(t *dataspace.Turn, cap *dataspace.Ref, err error)
}

func (a *answer) Assert(t *dataspace.Turn, v preserves.Value, _ dataspace.Handle) error {
	if a.done == nil {
		return nil
	}
	done := a.done
	res, err := rpc.ParseResult(v)
	if err != nil {
		return nil // not an answer
	}
	a.done = nil
	switch r := res.(type) {
	case rpc.ResultOk:
		if c, ok := dataspace.RefOf(r.Value.Value); ok {
			done(t, c, nil)
			return nil
		}
		done(t, nil, &ResolveError{Detail: v})
	case rpc.ResultError:
		done(t, nil, &ResolveError{Detail: r.Value.Error})
	}
	return nil
}

// Resolve exchanges step (typically a sturdy ref `<ref {…}>`; a bare
// Parameters dictionary is wrapped) for a capability at the gatekeeper gk,
// from outside any actor. It spawns a small actor in sys that holds the
// resolve assertion; call release when the capability is no longer needed
// (or let sys.Shutdown do it). It waits until the answer or ctx's end.
func Resolve(ctx context.Context, sys *dataspace.System, gk *dataspace.Ref, step preserves.Value) (cap *dataspace.Ref, release func(), err error) {
	if _, ok := preserves.Unwrap(step).(*preserves.Dictionary); ok {
		step = preserves.NewRecord(sturdy.LabelRef, step)
	}
	type res struct {
		cap *dataspace.Ref
		err error
	}
	ch := make(chan res, 1)
	frc := make(chan dataspace.FacetRef, 1)
	a := sys.Spawn("resolve", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		frc <- t.FacetRef()
		ResolveIn(t, gk, step, func(t *dataspace.Turn, c *dataspace.Ref, err error) {
			ch <- res{c, err}
		})
		return nil
	})
	var fr dataspace.FacetRef
	select {
	case fr = <-frc:
	case <-a.Done():
		return nil, nil, context.Canceled
	}
	release = func() { fr.ActivateNow(func(t *dataspace.Turn) error { t.StopRoot(); return nil }) }
	select {
	case r := <-ch:
		if r.err != nil {
			release()
			return nil, nil, r.err
		}
		return r.cap, release, nil
	case <-ctx.Done():
		release()
		return nil, nil, ctx.Err()
	case <-a.Done():
		return nil, nil, context.Canceled
	}
}

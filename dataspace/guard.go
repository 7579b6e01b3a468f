package dataspace

import "github.com/syndicate-go/syndicate/preserves"

// TypedEntity is an entity whose assertions and messages are values of a
// Go type T instead of Preserves values. [Guard] adapts one to [Entity].
// Callbacks have the same contract as Entity's; in particular Retract may
// name a handle whose assertion did not parse and so never reached Assert,
// and must then do nothing.
type TypedEntity[T any] interface {
	Assert(t *Turn, v T, h Handle) error
	Retract(t *Turn, h Handle) error
	Message(t *Turn, v T) error
	Sync(t *Turn, peer *Ref) error
}

// BaseTypedEntity gives a TypedEntity no-op defaults, like [BaseEntity]:
// Sync replies #t to the peer at once. Embed it and override what you need.
type BaseTypedEntity[T any] struct{}

// Assert does nothing.
func (BaseTypedEntity[T]) Assert(*Turn, T, Handle) error { return nil }

// Retract does nothing.
func (BaseTypedEntity[T]) Retract(*Turn, Handle) error { return nil }

// Message does nothing.
func (BaseTypedEntity[T]) Message(*Turn, T) error { return nil }

// Sync replies Synced (#t) to peer.
func (BaseTypedEntity[T]) Sync(t *Turn, peer *Ref) error { return BaseEntity{}.Sync(t, peer) }

// Guard adapts e to an [Entity] taking any value (runtime spec §6, Guard):
// each asserted or sent value goes through parse, and values parse rejects
// are silently dropped. Retractions are always forwarded, since the guard
// keeps no table of what it let through; Sync is passed to e. If e
// implements [StopHandler], so does the guard, so that [Turn.Create]
// registers e's OnStop.
func Guard[T any](parse func(preserves.Value) (T, bool), e TypedEntity[T]) Entity {
	g := guard[T]{parse: parse, e: e}
	if sh, ok := e.(StopHandler); ok {
		return &guardStop[T]{guard: g, sh: sh}
	}
	return &g
}

type guard[T any] struct {
	parse func(preserves.Value) (T, bool)
	e     TypedEntity[T]
}

func (g *guard[T]) Assert(t *Turn, v preserves.Value, h Handle) error {
	if x, ok := g.parse(v); ok {
		return g.e.Assert(t, x, h)
	}
	return nil
}

func (g *guard[T]) Retract(t *Turn, h Handle) error { return g.e.Retract(t, h) }

func (g *guard[T]) Message(t *Turn, v preserves.Value) error {
	if x, ok := g.parse(v); ok {
		return g.e.Message(t, x)
	}
	return nil
}

func (g *guard[T]) Sync(t *Turn, peer *Ref) error { return g.e.Sync(t, peer) }

// guardStop is a guard whose typed entity wants OnStop.
type guardStop[T any] struct {
	guard[T]
	sh StopHandler
}

func (g *guardStop[T]) OnStop(t *Turn) error { return g.sh.OnStop(t) }

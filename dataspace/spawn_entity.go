package dataspace

// SpawnForEntity creates an actor whose only job is to host e (runtime spec
// §7.6): e is placed in the new actor's root facet, and the actor's boot does
// nothing but prevent the inert check (never disarmed), so it lives until it
// is shut down or crashes. The Ref to e is usable at once; the actor boots
// when this turn commits (never, if the turn fails), before any event this
// turn sends to e is delivered.
func (t *Turn) SpawnForEntity(name string, e Entity) *Ref {
	c := t.Spawn(name, func(t *Turn) error {
		t.PreventInertCheck()
		return nil
	})
	// The child has not started, so its root facet may be set up from here,
	// as SpawnLink does.
	tg := &target{id: targetIDs.Add(1), actor: c, facet: c.root, entity: e}
	tg.base.tgt = tg
	if sh, ok := e.(StopHandler); ok {
		c.root.stops = append(c.root.stops, sh.OnStop)
	}
	return &tg.base
}

package services

import (
	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// Proxy is an entity that passes everything it receives on to Target,
// remembering which assertion it made for each it received, so that a
// retraction withdraws the right one. Entities that change or watch some
// of what passes (the scripts' `$log` marks messages, the admin socket
// notes who asked for an operation, an inbound connection watches what it
// resolves) embed it and override Assert or Message, calling Pass or
// Proxy.Message for what goes on.
//
// It only stores and passes values on, so it cannot fail on any value.
type Proxy struct {
	Target *dataspace.Ref
	held   map[dataspace.Handle]dataspace.Handle // received → ours at Target
}

// Pass asserts v at Target for the received assertion h.
func (p *Proxy) Pass(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) {
	if p.held == nil {
		p.held = map[dataspace.Handle]dataspace.Handle{}
	}
	p.held[h] = t.Assert(p.Target, v)
}

// Assert passes v on.
func (p *Proxy) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	p.Pass(t, v, h)
	return nil
}

// Retract withdraws what was passed on for h.
func (p *Proxy) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	if out, ok := p.held[h]; ok {
		delete(p.held, h)
		t.Retract(out)
	}
	return nil
}

// Message passes v on.
func (p *Proxy) Message(t *dataspace.Turn, v preserves.Value) error {
	t.Message(p.Target, v)
	return nil
}

// Sync is forwarded, so that the peer hears back once Target has seen
// everything passed on before it.
func (p *Proxy) Sync(t *dataspace.Turn, peer *dataspace.Ref) error {
	t.SyncPeer(p.Target, peer)
	return nil
}

package main

// dump and observe: subscriptions to the config dataspace. Both subscribe
// with the pattern wrapped in a capture, so that the whole matching
// assertion (not only its captures) comes back.

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	dsschema "github.com/syndicate-go/syndicate/dataspace/schemas/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/admin/session"
)

// observer is an entity receiving the captures of one subscription.
type observer struct {
	dataspace.BaseEntity
	held      dataspace.Held[[]preserves.Value]
	onAssert  func(t *dataspace.Turn, caps []preserves.Value)
	onRetract func(t *dataspace.Turn, caps []preserves.Value)
	onMessage func(t *dataspace.Turn, caps []preserves.Value)
}

// captures are the captures of an event; like every value from the
// server, they come without annotations (the relay drops them).
func captures(v preserves.Value) []preserves.Value {
	s, _ := v.(preserves.Sequence)
	return s
}

func (o *observer) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	caps := captures(v)
	if o.held == nil {
		o.held = dataspace.Held[[]preserves.Value]{}
	}
	o.held[h] = caps
	if o.onAssert != nil {
		o.onAssert(t, caps)
	}
	return nil
}

func (o *observer) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	caps, ok := o.held.Take(h)
	if !ok {
		return nil
	}
	if o.onRetract != nil {
		o.onRetract(t, caps)
	}
	return nil
}

func (o *observer) Message(t *dataspace.Turn, v preserves.Value) error {
	if o.onMessage != nil {
		o.onMessage(t, captures(v))
	}
	return nil
}

// subscribe asserts interest in p (wrapped in a capture of the whole value)
// at ds, delivering to o; it returns o's ref.
func subscribe(t *dataspace.Turn, ds *dataspace.Ref, p pattern.Pattern, o *observer) *dataspace.Ref {
	ref := t.Create(o)
	t.Assert(ds, dataspace.Observe(pattern.Bind{Pattern: p}, ref))
	return ref
}

// isObserve reports whether v is an `<Observe …>` subscription record.
func isObserve(v preserves.Value) bool {
	r, ok := v.(*preserves.Record)
	return ok && preserves.Equal(r.Label, dsschema.LabelObserve)
}

// observes reports whether v is the `<Observe PATTERN #:ref>` subscription
// of ref (dump leaves its own subscription out).
func observes(v preserves.Value, ref *dataspace.Ref) bool {
	r, ok := v.(*preserves.Record)
	if !ok || !isObserve(r) || len(r.Fields) != 2 {
		return false
	}
	got, ok := dataspace.RefOf(r.Fields[1])
	return ok && got == ref
}

// render writes a value for people: indented text; capabilities appear as
// `#:` followed by a description of the reference.
func render(v preserves.Value) string {
	return preserves.FormatTextIndent(v, "  ")
}

func (cl *cli) dump(ctx context.Context, all bool, args []string) error {
	p, err := patternArg(args)
	switch {
	case err != nil:
		return err
	case p == nil:
		p = pattern.Discard{}
	default:
		all = true // a pattern says exactly what is wanted
	}
	var vals []preserves.Value
	o := &observer{}
	var self *dataspace.Ref
	s, _, err := session.StartSynced(ctx, cl.conn, "dump", func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		self = subscribe(t, cfg, p, o)
		return nil
	}, func(*dataspace.Turn, *dataspace.Ref) {
		for _, caps := range o.held {
			if len(caps) > 0 && (all || !isObserve(caps[0])) && !observes(caps[0], self) {
				vals = append(vals, caps[0])
			}
		}
	})
	if err != nil {
		return err
	}
	defer s.Close()
	slices.SortFunc(vals, preserves.Compare)
	w := bufio.NewWriterSize(cl.stdout, 64<<10)
	for _, v := range vals {
		fmt.Fprintln(w, render(v))
	}
	return w.Flush()
}

func (cl *cli) observe(ctx context.Context, args []string) error {
	p, err := parsePattern(args[0])
	if err != nil {
		return err
	}
	line := func(sign string, caps []preserves.Value) {
		if len(caps) > 0 {
			fmt.Fprintf(cl.stdout, "%s %s\n", sign, preserves.FormatText(caps[0]))
		}
	}
	// Closing the session, or losing the connection, retracts everything
	// the subscription saw; those are not retractions in the server, so
	// they are not printed (issue 26: `- …` lines at exit).
	var ending atomic.Bool
	var sess atomic.Pointer[session.Session]
	s, _, err := session.Start(ctx, cl.conn, "observe", func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		subscribe(t, cfg, p, &observer{
			onAssert: func(_ *dataspace.Turn, caps []preserves.Value) { line("+", caps) },
			onRetract: func(_ *dataspace.Turn, caps []preserves.Value) {
				if s := sess.Load(); !ending.Load() && (s == nil || s.Err() == nil) {
					line("-", caps)
				}
			},
			onMessage: func(_ *dataspace.Turn, caps []preserves.Value) { line("!", caps) },
		})
		return nil
	})
	if err != nil {
		return err
	}
	sess.Store(s)
	defer func() { ending.Store(true); s.Close() }()
	// Until interrupted, or until the connection ends.
	if err := s.Wait(ctx, nil); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

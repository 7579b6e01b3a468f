package dataspace

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// indebted spawns an actor whose outside account is past the high-water
// mark, and returns it with a facet to activate and a function settling
// the debt.
func indebted(t *testing.T) (*Actor, FacetRef, func()) {
	t.Helper()
	s := newSys(t)
	ch := make(chan FacetRef, 1)
	a := s.Spawn("indebted", func(t *Turn) error {
		t.PreventInertCheck()
		ch <- t.FacetRef()
		return nil
	})
	fr := <-ch
	a.OutsideAccount().Borrow(ActivateHighWater + 1)
	return a, fr, func() { a.OutsideAccount().Repay(ActivateHighWater + 1) }
}

// Activate from outside waits while the actor's outside account is past
// the high-water mark, and runs once it is repaid.
func TestActivateWaitsPastHighWater(t *testing.T) {
	a, fr, settle := indebted(t)
	var ran atomic.Bool
	done := make(chan bool, 1)
	go func() { done <- fr.Activate(func(*Turn) error { ran.Store(true); return nil }) }()
	waitFor(t, "Activate to wait", func() bool { return a.ext.waiting.Load() == 1 })
	if ran.Load() {
		t.Fatal("Activate ran past the high-water mark")
	}
	settle()
	if !<-done || !ran.Load() {
		t.Fatal("Activate did not run once the debt was repaid")
	}
}

// ActivateContext gives up with the context's error, without running fn.
func TestActivateContextCancelled(t *testing.T) {
	_, fr, _ := indebted(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	var ran atomic.Bool
	go func() {
		_, err := fr.ActivateContext(ctx, func(*Turn) error { ran.Store(true); return nil })
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || ran.Load() {
		t.Fatalf("error %v, ran %v", err, ran.Load())
	}
}

// A waiting Activate returns false once the actor terminates.
func TestActivateWaitEndsWithActor(t *testing.T) {
	a, fr, _ := indebted(t)
	done := make(chan bool, 1)
	go func() { done <- fr.Activate(func(*Turn) error { return nil }) }()
	waitFor(t, "Activate to wait", func() bool { return a.ext.waiting.Load() == 1 })
	fr.ActivateNow(func(t *Turn) error { t.StopRoot(); return nil })
	if <-done {
		t.Fatal("Activate reported a terminated actor alive")
	}
}

// The activations that must never wait do not, however deep the debt:
// ActivateNow (stops, exit reports), timers (After, Every) and an
// activation from inside a turn of another actor.
func TestActivationsThatNeverWait(t *testing.T) {
	a, fr, _ := indebted(t)
	if !fr.ActivateNow(func(*Turn) error { return nil }) {
		t.Fatal("ActivateNow: actor dead")
	}
	fired := make(chan string, 2)
	fr.ActivateNow(func(t *Turn) error {
		t.After(time.Millisecond, func(*Turn) error { fired <- "after"; return nil })
		n := 0
		t.Every(time.Millisecond, func(t *Turn) error {
			if n++; n == 2 {
				fired <- "every"
			}
			return nil
		})
		return nil
	})
	for range 2 {
		select {
		case <-fired:
		case <-time.After(patience):
			t.Fatal("a timer waited for the debt")
		}
	}
	// From inside a turn of another actor.
	inner := make(chan struct{})
	a.sys.Spawn("other", func(t *Turn) error {
		fr.ActivateNow(func(*Turn) error { close(inner); return nil })
		return nil
	})
	select {
	case <-inner:
	case <-time.After(patience):
		t.Fatal("ActivateNow from inside a turn waited")
	}
}

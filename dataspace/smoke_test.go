package dataspace

import (
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

func TestSmokeDuring(t *testing.T) {
	s := newSys(t)
	_, ds := hold(t, s, "ds", NewDataspace())
	var got []preserves.Value
	var gone int
	done := make(chan struct{}, 10)
	s.Spawn("obs", func(t *Turn) error {
		t.During(ds, pattern.Rec(preserves.Symbol("foo"), pattern.Capture()), func(t *Turn, caps []preserves.Value) error {
			got = append(got, caps[0])
			t.OnStop(func(t *Turn) error { gone++; done <- struct{}{}; return nil })
			done <- struct{}{}
			return nil
		})
		return nil
	})
	pub := s.Spawn("pub", func(t *Turn) error {
		t.Assert(ds, preserves.Rec("foo", preserves.Int(1)))
		t.After(0, func(t *Turn) error { t.StopRoot(); return nil })
		return nil
	})
	<-done
	waitDone(t, pub)
	<-done
	if len(got) != 1 || !preserves.Equal(got[0], preserves.Int(1)) || gone != 1 {
		t.Fatalf("got %v gone %d", got, gone)
	}
}

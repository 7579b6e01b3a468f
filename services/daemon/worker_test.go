package daemon

import (
	"strconv"
	"strings"
	"testing"
)

// TestTallyTransitions drives a worker's readiness tally through event
// sequences. Each step is "EVENT[ SPEC] -> ready,completed" where events
// are sync, add, remove, up, down and complete, and SPEC numbers a spec.
func TestTallyTransitions(t *testing.T) {
	parallel(t)
	cases := []struct {
		name  string
		steps []string
	}{
		{"no spec: ready after the sync only", []string{
			"sync -> true,false",
		}},
		{"spec before sync is not ready", []string{
			"add 1 -> false,false",
			"sync -> false,false",
			"up 1 -> true,false",
		}},
		{"up twice counts once", []string{
			"sync -> true,false",
			"add 1 -> false,false",
			"up 1 -> true,false",
			"up 1 -> true,false",
			"down 1 -> false,false",
			"down 1 -> false,false",
			"up 1 -> true,false",
		}},
		{"two specs: ready when both are up", []string{
			"sync -> true,false",
			"add 1 -> false,false",
			"add 2 -> false,false",
			"up 1 -> false,false",
			"up 2 -> true,false",
			"down 2 -> false,false",
		}},
		{"removing an up spec keeps ready while another is up", []string{
			"sync -> true,false",
			"add 1 -> false,false",
			"add 2 -> false,false",
			"up 1 -> false,false",
			"up 2 -> true,false",
			"remove 1 -> true,false",
		}},
		{"removing the last spec never makes ready", []string{
			"sync -> true,false",
			"add 1 -> false,false",
			"remove 1 -> false,false",
			"add 2 -> false,false",
			"up 2 -> true,false",
			"remove 2 -> false,false",
		}},
		{"removing an unready spec makes ready", []string{
			"sync -> true,false",
			"add 1 -> false,false",
			"add 2 -> false,false",
			"up 1 -> false,false",
			"remove 2 -> true,false",
		}},
		{"one-shot completes: not ready, all completed", []string{
			"sync -> true,false",
			"add 1 -> false,false",
			"up 1 -> true,false",
			"down 1 -> false,false",
			"complete 1 -> false,true",
		}},
		{"completion needs every spec", []string{
			"sync -> true,false",
			"add 1 -> false,false",
			"add 2 -> false,false",
			"complete 1 -> false,false",
			"complete 2 -> false,true",
			"remove 2 -> false,true",
			"remove 1 -> false,false",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runTallySteps(t, c.steps) })
	}
}

// runTallySteps runs one case of TestTallyTransitions on a new tally.
func runTallySteps(t *testing.T, steps []string) {
	tl := newTally()
	specs := map[string]*specState{}
	for i, step := range steps {
		lhs, rhs, ok := strings.Cut(step, " -> ")
		if !ok {
			t.Fatalf("bad step %q", step)
		}
		ev, id, _ := strings.Cut(lhs, " ")
		s := specs[id]
		if s == nil {
			s = &specState{}
			specs[id] = s
		}
		switch ev {
		case "sync":
			tl.synced()
		case "add":
			tl.specAdded()
		case "remove":
			tl.specRemoved(s)
			delete(specs, id)
		case "up":
			tl.specUp(s)
		case "down":
			tl.specDown(s)
		case "complete":
			tl.specCompleted(s)
		default:
			t.Fatalf("unknown event %q", ev)
		}
		want := strings.Split(rhs, ",")
		got := []string{strconv.FormatBool(tl.ready()), strconv.FormatBool(tl.allCompleted())}
		if got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("step %d %q: ready,completed = %s, want %s (tally %+v)", i, step, strings.Join(got, ","), rhs, tl)
		}
	}
}

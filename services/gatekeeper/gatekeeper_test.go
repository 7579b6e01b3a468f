package gatekeeper

import (
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	gkschema "github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/rpc"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

var waitFor = testutil.WaitFor

// box records the assertions currently held at it.
type box struct {
	dataspace.BaseEntity
	mu   sync.Mutex
	vals map[dataspace.Handle]preserves.Value
	msgs []preserves.Value
}

func newBox() *box { return &box{vals: make(map[dataspace.Handle]preserves.Value)} }

func (b *box) Assert(_ *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	b.mu.Lock()
	b.vals[h] = v
	b.mu.Unlock()
	return nil
}

func (b *box) Retract(_ *dataspace.Turn, h dataspace.Handle) error {
	b.mu.Lock()
	delete(b.vals, h)
	b.mu.Unlock()
	return nil
}

func (b *box) Message(_ *dataspace.Turn, v preserves.Value) error {
	b.mu.Lock()
	b.msgs = append(b.msgs, v)
	b.mu.Unlock()
	return nil
}

func (b *box) all() []preserves.Value {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []preserves.Value
	for _, v := range b.vals {
		out = append(out, v)
	}
	return out
}

func (b *box) only(tb testing.TB) preserves.Value {
	tb.Helper()
	waitFor(tb, "an answer", func() bool { return len(b.all()) >= 1 })
	vs := b.all()
	if len(vs) != 1 {
		tb.Fatalf("answers %v", vs)
	}
	return vs[0]
}

type world struct {
	sys *dataspace.System
	a   *dataspace.Actor
	fr  dataspace.FacetRef
	bs  *dataspace.Ref
	gk  *dataspace.Ref
}

func newWorld(tb testing.TB) *world {
	w := &world{sys: dataspacetest.NewSystem(tb, dataspace.Options{})}
	ch := make(chan struct{})
	w.a = w.sys.Spawn("world", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		w.fr = t.FacetRef()
		w.bs = t.Create(dataspace.NewDataspace())
		w.gk = New(t, w.bs, zerolog.Nop())
		close(ch)
		return nil
	})
	<-ch
	return w
}

func (w *world) do(fn func(t *dataspace.Turn)) {
	w.fr.Activate(func(t *dataspace.Turn) error { fn(t); return nil })
}

func bind(oid preserves.Value, key []byte, target *dataspace.Ref, obs *dataspace.Ref) preserves.Value {
	var o preserves.Value = preserves.Bool(false)
	if obs != nil {
		o = dataspace.Embed(obs)
	}
	return preserves.NewRecord(gkschema.LabelBind,
		preserves.NewRecord(sturdy.LabelRef, preserves.NewDictionary(
			preserves.DictEntry{Key: symOid, Value: oid},
			preserves.DictEntry{Key: symKey, Value: preserves.ByteStringFrom(key)},
		)),
		dataspace.Embed(target), o)
}

func resolve(step preserves.Value, obs *dataspace.Ref) preserves.Value {
	return preserves.NewRecord(gkschema.LabelResolve, step, dataspace.Embed(obs))
}

func TestScenario63Gatekeeper(t *testing.T) {
	w := newWorld(t)
	key := []byte("secret key")
	target := newBox()
	var targetRef *dataspace.Ref
	w.do(func(t *dataspace.Turn) {
		targetRef = t.Create(target)
		t.Assert(w.bs, bind(preserves.String("x"), key, targetRef, nil))
	})
	good := caveat.Mint(preserves.String("x"), key)
	rej, _ := caveat.FromValue(preserves.NewRecord(preserves.Symbol("reject"), preserves.NewRecord(preserves.Symbol("rec"), preserves.Symbol("secret"), preserves.Sequence{preserves.NewRecord(preserves.Symbol("_"))})))
	attenuated, err := good.Attenuate(rej)
	if err != nil {
		t.Fatal(err)
	}
	bad := caveat.Mint(preserves.String("x"), []byte("wrong key"))

	t.Run("valid sturdy ref", func(t *testing.T) {
		obs := newBox()
		w.do(func(t *dataspace.Turn) { t.Assert(w.gk, resolve(good.ToValue(), t.Create(obs))) })
		r := obs.only(t).(*preserves.Record)
		got, ok := dataspace.RefOf(r.Fields[0])
		if r.Label != rpc.LabelOk || !ok || !got.Equal(targetRef) {
			t.Fatalf("got %v", r)
		}
	})
	t.Run("attenuated sturdy ref", func(t *testing.T) {
		obs := newBox()
		w.do(func(t *dataspace.Turn) { t.Assert(w.gk, resolve(attenuated.ToValue(), t.Create(obs))) })
		r := obs.only(t).(*preserves.Record)
		got, ok := dataspace.RefOf(r.Fields[0])
		if r.Label != rpc.LabelOk || !ok || len(got.Caveats()) != 1 {
			t.Fatalf("got %v", r)
		}
		w.do(func(t *dataspace.Turn) {
			t.Message(got, preserves.NewRecord(preserves.Symbol("secret"), preserves.Int(1)))
			t.Message(got, preserves.NewRecord(preserves.Symbol("public"), preserves.Int(1)))
		})
		waitFor(t, "public", func() bool { target.mu.Lock(); defer target.mu.Unlock(); return len(target.msgs) == 1 })
		// Both were sent in one turn, secret first: the one that arrived
		// must be the public one (a leaked secret would arrive first).
		target.mu.Lock()
		first := target.msgs[0]
		target.mu.Unlock()
		if want := preserves.NewRecord(preserves.Symbol("public"), preserves.Int(1)); !preserves.Equal(first, want) {
			t.Fatalf("target got %v, want only %v", first, want)
		}
	})
	t.Run("bad signature", func(t *testing.T) {
		obs := newBox()
		w.do(func(t *dataspace.Turn) { t.Assert(w.gk, resolve(bad.ToValue(), t.Create(obs))) })
		if v := obs.only(t); !preserves.Equal(v, errValidation) {
			t.Fatalf("got %v", v)
		}
	})
	t.Run("unknown step type", func(t *testing.T) {
		obs := newBox()
		w.do(func(t *dataspace.Turn) {
			t.Assert(w.gk, resolve(preserves.NewRecord(preserves.Symbol("frob"), preserves.Int(1)), t.Create(obs)))
		})
		if v := obs.only(t); !preserves.Equal(v, errUnsupported) {
			t.Fatalf("got %v", v)
		}
	})
	t.Run("unparsable ref detail", func(t *testing.T) {
		obs := newBox()
		w.do(func(t *dataspace.Turn) {
			t.Assert(w.gk, resolve(preserves.NewRecord(sturdy.LabelRef, preserves.Int(3)), t.Create(obs)))
		})
		if v := obs.only(t); !preserves.Equal(v, errInvalid) {
			t.Fatalf("got %v", v)
		}
	})
	t.Run("scenario 58: direct answer before any bind", func(t *testing.T) { directAnswer(t, w, key) })
	t.Run("resolve before bind", func(t *testing.T) {
		obs := newBox()
		z := caveat.Mint(preserves.String("z"), key)
		w.do(func(t *dataspace.Turn) { t.Assert(w.gk, resolve(z.ToValue(), t.Create(obs))) })
		w.do(func(t *dataspace.Turn) { t.Assert(w.bs, bind(preserves.String("z"), key, targetRef, nil)) })
		r := obs.only(t).(*preserves.Record)
		if r.Label != rpc.LabelOk {
			t.Fatalf("got %v", r)
		}
	})
	t.Run("Q11 non-bytes key answers invalid", func(t *testing.T) { nonBytesKey(t, w, key, targetRef, good) })
}

// nonBytesKey is Q11: a bind whose key is not bytes answers invalid,
// and the gatekeeper goes on answering.
func nonBytesKey(t *testing.T, w *world, key []byte, targetRef *dataspace.Ref, good *caveat.SturdyRef) {
	w.do(func(t *dataspace.Turn) {
		t.Assert(w.bs, preserves.NewRecord(gkschema.LabelBind,
			preserves.NewRecord(sturdy.LabelRef, preserves.NewDictionary(
				preserves.DictEntry{Key: symOid, Value: preserves.String("q")},
				preserves.DictEntry{Key: symKey, Value: preserves.String("not bytes")},
			)), dataspace.Embed(targetRef), preserves.Bool(false)))
	})
	obs := newBox()
	q := caveat.Mint(preserves.String("q"), key)
	w.do(func(t *dataspace.Turn) { t.Assert(w.gk, resolve(q.ToValue(), t.Create(obs))) })
	if v := obs.only(t); !preserves.Equal(v, errInvalid) {
		t.Fatalf("got %v", v)
	}
	// The gatekeeper's actor survived.
	obs2 := newBox()
	w.do(func(t *dataspace.Turn) { t.Assert(w.gk, resolve(good.ToValue(), t.Create(obs2))) })
	obs2.only(t)
}

// directAnswer is services scenario 58: a Resolve answered directly by
// a party in the bind space, before any bind.
func directAnswer(t *testing.T, w *world, key []byte) {
	// A party answers forwarded Resolves for oid "y" in the bind
	// space; no bind for "y" exists.
	w.do(func(t *dataspace.Turn) {
		p := pattern.Rec(gkschema.LabelResolve, pattern.Rec(sturdy.LabelRef, pattern.Dict(pattern.Entry{Key: symOid, Pattern: pattern.MustLift(preserves.String("y"))})), pattern.Capture())
		t.During(w.bs, p, func(t *dataspace.Turn, caps []preserves.Value) error {
			k, _ := dataspace.RefOf(caps[0])
			t.Assert(k, preserves.NewRecord(rpc.LabelOk, preserves.String("direct")))
			return nil
		})
	})
	obs := newBox()
	var h dataspace.Handle
	y := caveat.Mint(preserves.String("y"), key)
	w.do(func(t *dataspace.Turn) { h = t.Assert(w.gk, resolve(y.ToValue(), t.Create(obs))) })
	if v := obs.only(t); !preserves.Equal(v, preserves.NewRecord(rpc.LabelOk, preserves.String("direct"))) {
		t.Fatalf("got %v", v)
	}
	// Retracting the Resolve retracts the answer.
	w.do(func(t *dataspace.Turn) { t.Retract(h) })
	waitFor(t, "answer retracted", func() bool { return len(obs.all()) == 0 })
}

// Services scenario 56: a bind with an observer is answered with the
// root-signature path step.
func TestScenario56BoundAnswer(t *testing.T) {
	w := newWorld(t)
	obs := newBox()
	w.do(func(t *dataspace.Turn) {
		t.Assert(w.bs, bind(preserves.String("x"), nil, t.Create(newBox()), t.Create(obs)))
	})
	sr := caveat.Mint(preserves.String("x"), nil)
	want := preserves.NewRecord(gkschema.LabelBound, sr.ToValue())
	if v := obs.only(t); !preserves.Equal(v, want) {
		t.Fatalf("got %v, want %v", v, want)
	}
}

// Services scenario 59: the gatekeeper service.
func TestScenario59GatekeeperService(t *testing.T) {
	w := newWorld(t)
	var cfgRef *dataspace.Ref
	mirror := newBox()
	w.do(func(t *dataspace.Turn) {
		cfgRef = t.Create(dataspace.NewDataspace())
		m := t.Create(mirror)
		t.During(cfgRef, pattern.Capture(), func(t *dataspace.Turn, caps []preserves.Value) error {
			t.Assert(m, caps[0]) // retracted with the tuple's facet
			return nil
		})
		env := services.Env{Config: cfgRef, Logger: zerolog.Nop()}
		if err := Boot(t, env); err != nil {
			panic(err)
		}
		t.Assert(cfgRef, services.RunService(preserves.NewRecord(internalservices.LabelGatekeeper, dataspace.Embed(w.bs))))
	})
	name := preserves.NewRecord(internalservices.LabelGatekeeper, dataspace.Embed(w.bs))
	has := func(v preserves.Value) bool {
		for _, x := range mirror.all() {
			if preserves.Equal(x, v) {
				return true
			}
		}
		return false
	}
	waitFor(t, "ready", func() bool { return has(services.ServiceState(name, services.StateReady)) })
	if !has(services.ServiceState(name, services.StateStarted)) {
		t.Fatal("no started state")
	}
	var gk *dataspace.Ref
	for _, x := range mirror.all() {
		if r, ok := x.(*preserves.Record); ok && r.Label == service.LabelServiceObject {
			gk, _ = dataspace.RefOf(r.Fields[1])
		}
	}
	if gk == nil {
		t.Fatal("no service object")
	}
	// The published gatekeeper works over the bind space.
	obs := newBox()
	w.do(func(t *dataspace.Turn) {
		t.Assert(w.bs, bind(preserves.Symbol("svc"), []byte("k"), t.Create(newBox()), nil))
		t.Assert(gk, resolve(caveat.Mint(preserves.Symbol("svc"), []byte("k")).ToValue(), t.Create(obs)))
	})
	if r := obs.only(t).(*preserves.Record); r.Label != rpc.LabelOk {
		t.Fatalf("got %v", r)
	}
}

// Go deviation (services spec §0): a <gatekeeper …> request that does not
// parse is reported as failed rather than ignored.
func TestBootMalformedRequest(t *testing.T) {
	w := newWorld(t)
	mirror := newBox()
	var cfgRef *dataspace.Ref
	w.do(func(t *dataspace.Turn) {
		cfgRef = t.Create(dataspace.NewDataspace())
		m := t.Create(mirror)
		t.During(cfgRef, pattern.Capture(), func(t *dataspace.Turn, caps []preserves.Value) error {
			t.Assert(m, caps[0])
			return nil
		})
		if err := Boot(t, services.Env{Config: cfgRef, Logger: zerolog.Nop()}); err != nil {
			panic(err)
		}
		t.Assert(cfgRef, services.RunService(preserves.NewRecord(internalservices.LabelGatekeeper, preserves.String("not a ref"))))
	})
	want := services.ServiceState(preserves.NewRecord(internalservices.LabelGatekeeper, preserves.String("not a ref")), services.StateFailed)
	waitFor(t, "failed state", func() bool {
		for _, v := range mirror.all() {
			if preserves.Equal(v, want) {
				return true
			}
		}
		return false
	})
}

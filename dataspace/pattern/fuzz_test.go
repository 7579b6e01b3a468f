package pattern

import (
	"errors"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// byteSrc turns fuzzer bytes into a value, biased towards the labels of the
// pattern schema so that the fuzzer reaches deep into FromValue and Match.
// (The Preserves decoders live in another package and are fuzzed there.)
type byteSrc struct {
	b []byte
}

func (s *byteSrc) next() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

var fuzzSymbols = []preserves.Symbol{"_", "bind", "lit", "group", "rec", "arr", "dict", "foo", "a"}

func (s *byteSrc) value(depth int) preserves.Value {
	c := s.next()
	if depth > 8 {
		c %= 6
	}
	switch c % 12 {
	case 0:
		return preserves.Int(int8(s.next()) % 5)
	case 1:
		return fuzzSymbols[int(s.next())%len(fuzzSymbols)]
	case 2:
		return preserves.String(fuzzSymbols[int(s.next())%len(fuzzSymbols)])
	case 3:
		return preserves.Bool(s.next()&1 == 1)
	case 4:
		return preserves.NewDouble(float64(s.next()))
	case 5:
		return preserves.NewEmbedded(preserves.Int(s.next() % 3))
	case 6, 7:
		label := preserves.Value(fuzzSymbols[int(s.next())%len(fuzzSymbols)])
		return preserves.NewRecord(label, s.items(depth)...)
	case 8:
		return preserves.Sequence(s.items(depth))
	case 9:
		kvs := s.items(depth)
		es := make([]preserves.DictEntry, 0, len(kvs)/2)
		for i := 0; i+1 < len(kvs); i += 2 {
			es = append(es, preserves.DictEntry{Key: kvs[i], Value: kvs[i+1]})
		}
		return preserves.NewDictionary(es...)
	case 10:
		return preserves.NewSet(s.items(depth)...)
	default:
		return preserves.Annotate(s.value(depth+1), preserves.String("ann"))
	}
}

func (s *byteSrc) items(depth int) []preserves.Value {
	n := int(s.next() % 4)
	out := make([]preserves.Value, n)
	for i := range out {
		out[i] = s.value(depth + 1)
	}
	return out
}

func countBinds(p Pattern) int {
	switch x := p.(type) {
	case Bind:
		return 1 + countBinds(x.Pattern)
	case Group:
		n := 0
		for _, e := range x.Entries {
			n += countBinds(e.Pattern)
		}
		return n
	}
	return 0
}

func hasSet(v preserves.Value) bool {
	switch x := preserves.Unwrap(v).(type) {
	case *preserves.Set:
		return true
	case *preserves.Record:
		for _, f := range x.Fields {
			if hasSet(f) {
				return true
			}
		}
	case preserves.Sequence:
		for _, f := range x {
			if hasSet(f) {
				return true
			}
		}
	case *preserves.Dictionary:
		for _, e := range x.Entries() {
			if hasSet(e.Value) {
				return true
			}
		}
	}
	return false
}

func FuzzFromValueMatch(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{6, 1, 1, 6, 0, 0})                         // <bind <_>>-ish
	f.Add([]byte{6, 3, 2, 6, 4, 1, 0, 9, 2, 0, 1, 6, 0, 0}) // <group <rec ..> {..}>
	f.Add([]byte{6, 2, 1, 8, 1, 0, 3})                      // <lit [..]>
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &byteSrc{b: data}
		pv, v := src.value(0), src.value(0)
		agreesWithSchema(t, pv)

		p, err := FromValue(pv)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("FromValue error %v does not wrap ErrMalformed", err)
			}
		} else {
			back := ToValue(p)
			if !preserves.Equal(back, preserves.Strip(pv)) {
				t.Fatalf("ToValue(FromValue(%v)) = %v", pv, back)
			}
			if q, err := FromValue(back); err != nil || !Equal(p, q) {
				t.Fatalf("round trip of %v: %#v %v", back, q, err)
			}
			for _, w := range []preserves.Value{v, pv} {
				caps, ok := Match(p, w)
				if ok && len(caps) != countBinds(p) {
					t.Fatalf("Match(%v, %v) captured %d values, pattern has %d binds", back, w, len(caps), countBinds(p))
				}
				if plain, ok2 := Match(p, preserves.Strip(w)); ok2 != ok || (ok && !preserves.Equal(preserves.Sequence(plain), preserves.Sequence(caps))) {
					t.Fatalf("annotations changed the match of %v against %v", back, w)
				}
			}
			if d, ok := Drop(p); ok {
				if _, ok := Match(p, d); !ok {
					t.Fatalf("Drop(%v) = %v does not match its pattern", back, d)
				}
			}
		}

		if hasSet(v) {
			if _, err := Lift(v); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Lift(%v) = %v, want ErrMalformed", v, err)
			}
			return
		}
		lp, err := Lift(v)
		if err != nil {
			t.Fatalf("Lift(%v): %v", v, err)
		}
		if caps, ok := Match(lp, v); !ok || len(caps) != 0 {
			t.Fatalf("MustLift(%v) does not match it", v)
		}
		if d, ok := Drop(lp); !ok || !preserves.Equal(d, v) {
			t.Fatalf("Drop(MustLift(%v)) = %v %v", v, d, ok)
		}
	})
}

// FuzzFromValueText feeds FromValue what the Preserves text reader makes of
// arbitrary input, with annotations and positions kept, and matches the
// result against a second value from the same input.
func FuzzFromValueText(f *testing.F) {
	for _, s := range []string{
		`<_>`, `<bind <_>>`, `<lit 1>`, `<lit [1]>`, `<group <arr> {1: <_>}>`,
		`<group <rec p> {0: <bind <group <arr> {0: <bind <_>>}>>, 1: <bind <_>>}> <p [7 8] 9>`,
		`<group <dict> {a: <bind <_>>}> {a: 1 b: 2}`,
		`@ann <group <rec foo> {10: <bind <_>> 2: <lit "x">}> <foo 0 1 "x" 3 4 5 6 7 8 9 10>`,
		`<group <rec foo> {x: <_>}> #f`, `<bind> <bind 1 2>`, `<lit #:<x>>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		vs, err := preserves.ReadAllText([]byte(src), preserves.TextOptions{Annotations: true, Positions: true})
		if err != nil || len(vs) == 0 {
			return
		}
		agreesWithSchema(t, vs[0])
		p, err := FromValue(vs[0])
		if err != nil {
			var pe *Error
			if !errors.Is(err, ErrMalformed) || !errors.As(err, &pe) {
				t.Fatalf("FromValue(%q): error %v is not a *Error wrapping ErrMalformed", src, err)
			}
			if !pe.Pos.IsValid() {
				t.Fatalf("FromValue(%q): error %v has no position", src, err)
			}
			return
		}
		if q, err := FromValue(ToValue(p)); err != nil || !Equal(p, q) {
			t.Fatalf("round trip of %q: %v", src, err)
		}
		for _, v := range vs[1:] {
			caps, ok := Match(p, v)
			if ok && len(caps) != countBinds(p) {
				t.Fatalf("Match(%q) captured %d values for %d binds", src, len(caps), countBinds(p))
			}
			if _, ok2 := Match(p, preserves.Strip(v)); ok2 != ok {
				t.Fatalf("annotations changed the match in %q", src)
			}
		}
	})
}

package preserves

import (
	"runtime"
	"testing"
	"time"
)

func readPositioned(t *testing.T, src string) Value {
	t.Helper()
	v, err := ParseTextOptions([]byte(src), TextOptions{File: "f.pr", Positions: true, Annotations: true})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// StripRemembering returns a plain value whose compounds and items still
// name the places they were read from.
func TestStripRemembering(t *testing.T) {
	v := StripRemembering(readPositioned(t, "# c\n<daemon d {argv: \"x\", restart: [1 2]} #{a}>"))
	if HasAnnotations(v) {
		t.Fatalf("%v still carries annotations", v)
	}
	if !Equal(v, readPositioned(t, `<daemon d {argv: "x", restart: [1 2]} #{a}>`)) {
		t.Fatalf("value changed: %v", v)
	}
	r := v.(*Record)
	d := r.Fields[1].(*Dictionary)
	restart, _ := d.Get(Symbol("restart"))
	for _, c := range []struct {
		what string
		got  Pos
		want string
	}{
		{"record", PosOf(r), "f.pr:2:1"},
		{"label", ItemPos(r, 0), "f.pr:2:2"},
		{"field 0", FieldPos(r, 0), "f.pr:2:9"},
		{"dictionary", FieldPos(r, 1), "f.pr:2:11"},
		{"argv value", EntryPos(d, Symbol("argv")), "f.pr:2:18"},
		{"argv key", ItemPos(d, 0), "f.pr:2:12"},
		{"restart", PosOf(restart), "f.pr:2:32"},
		{"restart[1]", ItemPos(restart, 1), "f.pr:2:35"},
		{"set element", ItemPos(r.Fields[2], 0), "f.pr:2:41"},
		{"missing key", EntryPos(d, Symbol("dir")), "-"},
		{"out of range", ItemPos(r, 9), "-"},
	} {
		if c.got.String() != c.want {
			t.Errorf("%s: position %s, want %s", c.what, c.got, c.want)
		}
	}
	// Atoms and plain values are known to no table.
	if p := PosOf(String("x")); p.IsValid() {
		t.Errorf("an atom has position %s", p)
	}
	plain := Sequence{Int(1)}
	if out := StripRemembering(plain).(Sequence); &out[0] != &plain[0] || PosOf(plain).IsValid() {
		t.Errorf("a plain value was copied or given a position")
	}
}

// Dictionaries and sets built from unsorted parts keep each part's
// position in the collection's own order.
func TestNewDictionaryAtAndNewSetAt(t *testing.T) {
	at := func(l int) Pos { return Pos{File: "g", Line: l, Col: 1} }
	d := NewDictionaryAt(at(1), []DictEntry{{Symbol("z"), Int(1)}, {Symbol("a"), Int(2)}, {Symbol("z"), Int(3)}},
		[]Pos{at(2), at(3), at(4)}, []Pos{at(5), at(6), at(7)})
	if !Equal(d, Dict(Symbol("a"), Int(2), Symbol("z"), Int(3))) {
		t.Fatalf("dictionary %v", d)
	}
	if got := [...]string{PosOf(d).String(), EntryPos(d, Symbol("a")).String(), EntryPos(d, Symbol("z")).String(), ItemPos(d, 2).String()}; got != [...]string{"g:1:1", "g:6:1", "g:7:1", "g:4:1"} {
		t.Errorf("dictionary positions %v", got)
	}
	s := NewSetAt(at(1), []Value{Int(3), Int(1), Int(3)}, []Pos{at(2), at(3), at(4)})
	if got := [...]string{ItemPos(s, 0).String(), ItemPos(s, 1).String()}; got != [...]string{"g:3:1", "g:2:1"} || s.Len() != 2 {
		t.Errorf("set %v positions %v", s, got)
	}
}

// Values carved from one allocation (as the compiler's slabs do) are
// told apart: each interior address is its own key.
func TestRememberInteriorPointers(t *testing.T) {
	slab := make([]Record, 2)
	vals := make([]Value, 4)
	a, b := &slab[0], &slab[1]
	s1, s2 := Sequence(vals[0:2:2]), Sequence(vals[2:4])
	Remember(a, Pos{Line: 1}, nil)
	Remember(b, Pos{Line: 2}, nil)
	Remember(s1, Pos{Line: 3}, nil)
	Remember(s2, Pos{Line: 4}, nil)
	if got := [...]int{PosOf(a).Line, PosOf(b).Line, PosOf(s1).Line, PosOf(s2).Line}; got != [...]int{1, 2, 3, 4} {
		t.Errorf("lines %v", got)
	}
	runtime.KeepAlive(slab)
	runtime.KeepAlive(vals)
}

// The table holds its values weakly: once they are collected their
// entries go, so it never grows beyond the live values it describes.
func TestPositionsAreReclaimed(t *testing.T) {
	before := rememberedCount()
	const n = 1000
	func() {
		for i := 0; i < n; i++ {
			Remember(NewRecord(Symbol("x"), Int(i)), Pos{File: "h", Line: i + 1}, []Pos{{Line: 1}})
		}
	}()
	if rememberedCount() < before+n {
		t.Fatalf("%d entries after remembering %d values", rememberedCount()-before, n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for rememberedCount() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d entries still held after GC", rememberedCount()-before, n)
		}
		runtime.GC()
		time.Sleep(time.Millisecond) // poll: cleanups run on their own goroutine
	}
}

// Values remembered through an Owner share its weak pointer: they are
// known while it lives and forgotten with it.
func TestOwnerRemembers(t *testing.T) {
	before := rememberedCount()
	type program struct {
		*Owned
		consts []Value
	}
	prog := &program{Owned: NewOwned()}
	o := prog.Owner()
	for i := 0; i < 100; i++ {
		v := o.StripRemembering(readPositioned(t, "<a [1 2]>"))
		prog.consts = append(prog.consts, v)
	}
	r := prog.consts[7].(*Record)
	if got := [...]string{PosOf(r).String(), FieldPos(r, 0).String(), ItemPos(r.Fields[0], 1).String()}; got != [...]string{"f.pr:1:1", "f.pr:1:4", "f.pr:1:7"} {
		t.Errorf("positions %v", got)
	}
	if n := rememberedCount() - before; n < 200 {
		t.Fatalf("%d entries for 100 owned values", n)
	}
	runtime.KeepAlive(prog)
	prog, r = nil, nil
	deadline := time.Now().Add(10 * time.Second)
	for rememberedCount() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries still held after their owner went", rememberedCount()-before)
		}
		runtime.GC()
		time.Sleep(time.Millisecond) // poll: the sweep runs after a GC
	}
}

// Duplicates that an owned set or dictionary drops are forgotten: their
// owner would otherwise keep claiming their addresses after they go.
func TestOwnerForgetsDroppedDuplicates(t *testing.T) {
	type program struct {
		*Owned
		v Value
	}
	prog := &program{Owned: NewOwned()}
	o := prog.Owner()
	a, b := o.StripRemembering(readPositioned(t, "[1]")), o.StripRemembering(readPositioned(t, "[1]"))
	s := o.NewSetAt(Pos{Line: 9}, []Value{a, b}, nil)
	prog.v = s
	if PosOf(a).Line != 1 || PosOf(b).IsValid() {
		t.Errorf("kept %v, dropped %v", PosOf(a), PosOf(b))
	}
	d := o.NewDictionaryAt(Pos{Line: 9}, []DictEntry{{Int(1), a}, {Int(1), b}}, nil, nil)
	prog.v = d
	if PosOf(a).IsValid() || !PosOf(s).IsValid() {
		t.Errorf("the losing entry's value is still known at %v", PosOf(a))
	}
	runtime.KeepAlive(prog)
}

// A table at rest (swept, nothing added since) is swept again when an
// owner goes: a removed config file's positions do not wait for the next
// script to change the table (issue 28).
func TestOwnerGoneSweepsTableAtRest(t *testing.T) {
	before := rememberedCount()
	type program struct {
		*Owned
		consts []Value
	}
	prog := &program{Owned: NewOwned()}
	o := prog.Owner()
	for i := 0; i < 100; i++ {
		prog.consts = append(prog.consts, o.StripRemembering(readPositioned(t, "<a [1 2]>")))
	}
	atRest := func() bool {
		positions.mu.Lock()
		defer positions.mu.Unlock()
		return positions.added == 0 && !positions.dying
	}
	deadline := time.Now().Add(10 * time.Second)
	for !atRest() {
		if time.Now().After(deadline) {
			t.Fatal("the table never came to rest")
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	runtime.KeepAlive(prog)
	prog = nil
	for rememberedCount() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries still held after their owner went", rememberedCount()-before)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// An Owner's table gives back exactly what was remembered (offsets, zero
// positions among items included), before and after Compact; a value with
// a position in another file is remembered all the same, and remembering
// a value again replaces what was known.
func TestOwnerPacksPositions(t *testing.T) {
	type program struct {
		*Owned
		consts []Value
	}
	prog := &program{Owned: NewOwned()}
	o := prog.Owner()
	at := func(file string, line int) Pos { return Pos{File: file, Offset: 10 * line, Line: line, Col: line + 1} }
	var recs []*Record
	for i := range 50 {
		r := NewRecord(Symbol("x"), Int(i), Int(-i))
		o.Remember(r, at("a.pr", i+1), []Pos{at("a.pr", i+2), {}, at("a.pr", i+3)})
		recs = append(recs, r)
		prog.consts = append(prog.consts, r)
	}
	other := NewRecord(Symbol("y"), Int(1))
	o.Remember(other, at("a.pr", 7), []Pos{at("b.pr", 8), at("a.pr", 9)})
	again := NewRecord(Symbol("z"))
	o.Remember(again, at("a.pr", 1), nil)
	o.Remember(again, at("a.pr", 2), []Pos{at("a.pr", 3)})
	prog.consts = append(prog.consts, other, again)
	check := func(when string) {
		for i, r := range recs {
			got := [...]Pos{PosOf(r), ItemPos(r, 0), ItemPos(r, 1), ItemPos(r, 2), ItemPos(r, 3)}
			want := [...]Pos{at("a.pr", i+1), at("a.pr", i+2), {}, at("a.pr", i+3), {}}
			if got != want {
				t.Fatalf("%s: record %d: positions %v, want %v", when, i, got, want)
			}
		}
		if got := [...]Pos{PosOf(other), ItemPos(other, 0), ItemPos(other, 1)}; got != [...]Pos{at("a.pr", 7), at("b.pr", 8), at("a.pr", 9)} {
			t.Errorf("%s: the value with another file: %v", when, got)
		}
		if got := [...]Pos{PosOf(again), ItemPos(again, 0)}; got != [...]Pos{at("a.pr", 2), at("a.pr", 3)} {
			t.Errorf("%s: the value remembered again: %v", when, got)
		}
	}
	check("before Compact")
	o.Compact()
	check("after Compact")
	o.drop(recs[3])
	if PosOf(recs[3]).IsValid() || !PosOf(recs[4]).IsValid() {
		t.Errorf("after drop: %v and %v", PosOf(recs[3]), PosOf(recs[4]))
	}
	runtime.KeepAlive(prog)
}

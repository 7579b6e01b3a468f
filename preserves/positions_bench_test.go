package preserves

import (
	"runtime"
	"testing"
	"weak"
)

// BenchmarkRemember is the cost of remembering one freshly built compound
// (the VM's price per built value under compile.Options.Positions).
func BenchmarkRemember(b *testing.B) {
	items := []Pos{{Line: 1}, {Line: 2}}
	for i := 0; i < b.N; i++ {
		Remember(NewRecord(Symbol("x"), Int(i)), Pos{Line: 1}, items)
	}
}

func BenchmarkWeakMake(b *testing.B) {
	for i := 0; i < b.N; i++ {
		r := NewRecord(Symbol("x"), Int(i))
		_ = weak.Make(r)
	}
}

func BenchmarkAddCleanup(b *testing.B) {
	for i := 0; i < b.N; i++ {
		r := NewRecord(Symbol("x"), Int(i))
		runtime.AddCleanup(r, func(int) {}, i)
	}
}

func BenchmarkNewRecord(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_ = NewRecord(Symbol("x"), Int(i))
	}
}

package pattern

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// benchObserve is the pattern of a typical Observe: a record with a
// literal, a capture and a nested array.
const benchObserve = `<group <rec Present> {0: <lit "svc"> 1: <bind <_>> 2: <group <arr> {0: <lit 3> 1: <bind <_>>}>}>`

// BenchmarkFromValue: what the dataspace does per Observe assertion.
func BenchmarkFromValue(b *testing.B) {
	v, err := preserves.ParseText(benchObserve)
	if err != nil {
		b.Fatal(err)
	}
	v = preserves.Strip(v)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromValue(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToValue: what Observe does per subscription a Go service makes.
func BenchmarkToValue(b *testing.B) {
	v, err := preserves.ParseText(benchObserve)
	if err != nil {
		b.Fatal(err)
	}
	p, err := FromValue(v)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = ToValue(p)
	}
}

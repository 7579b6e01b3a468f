package listener

import (
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
)

// FuzzParseName feeds arbitrary relay-listener names (with #:0 standing
// for a capability) to the name parser: no panics; success means a known
// network and a 2-field service name.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{
		`<relay-listener <tcp "0.0.0.0" 9001> #:0>`,
		`<relay-listener <tcp "h" 1> #:0 #:0>`,
		`<relay-listener <unix "/p"> #:0>`,
		`<relay-listener <unix "/p"> #:0 #:0>`,
		`<relay-listener <tcp 1 "x"> #:0>`,
		`<relay-listener>`, `<relay-listener 1 2>`,
	} {
		f.Add(s)
	}
	var ref *dataspace.Ref
	sys := dataspace.NewSystem(dataspace.Options{})
	ch := make(chan struct{})
	sys.Spawn("x", func(t *dataspace.Turn) error {
		ref = t.Create(dataspace.BaseEntity{})
		close(ch)
		return nil
	})
	<-ch
	f.Fuzz(func(t *testing.T, s string) {
		v, err := preserves.ParseTextOptions([]byte(s), preserves.TextOptions{Embedded: func(preserves.Value) (any, error) { return ref, nil }})
		if err != nil {
			return
		}
		r, ok := v.(*preserves.Record)
		if !ok {
			return
		}
		sp, err := parseName(r)
		if err != nil {
			return
		}
		if sp.addr.Network != transport.TCP && sp.addr.Network != transport.Unix {
			t.Fatalf("network %v", sp.addr.Network)
		}
		if n := sp.name.(*preserves.Record); len(n.Fields) != 2 {
			t.Fatalf("service name %v", sp.name)
		}
	})
}

package schemas_test

import (
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	"github.com/syndicate-go/syndicate/dataspace/schemas/noise"
	"github.com/syndicate-go/syndicate/dataspace/schemas/protocol"
	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/preserves"
)

// FuzzParsers: the generated parsers take values from peers and scripts,
// so no value may make one panic; what parses writes back a value that
// parses again. Run with -fuzz on demand.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{
		`<daemon x {argv: ["a" "b"] env: {A: "1" B: #f} restart: always}>`,
		`<resolve <ref {oid: 1 sig: #x"00" caveats: [<rewrite <bind <_>> <ref 0>>]}> #:0>`,
		`[[1 <A <x> 2>] [1 <R 2>]]`, `<error "e" 1>`, `{service: x key: #x"00" protocol: "p" preSharedKeys: [#x"01"]}`,
	} {
		f.Add(s)
	}
	parsers := []func(preserves.Value) (valuer, error){
		p(externalservices.ParseDaemonProcess), p(gatekeeper.ParseResolve), p(sturdy.ParseSturdyRef),
		p(sturdy.ParseCaveat), p(protocol.ParsePacket), p(noise.ParseNoiseSpec),
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := preserves.ParseTextOptions([]byte(s), preserves.TextOptions{
			Embedded: func(v preserves.Value) (any, error) { return v, nil }})
		if err != nil {
			return
		}
		for _, parse := range parsers {
			x, err := parse(v)
			if err != nil {
				continue
			}
			if _, err := parse(x.ToValue()); err != nil {
				t.Fatalf("%s parses, its ToValue %s does not: %v", s, preserves.FormatText(x.ToValue()), err)
			}
		}
	})
}

package config

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// FuzzParseName feeds arbitrary Preserves text to the service-name schema
// check: it must never panic, and what it accepts must be what it returns.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{
		`<config-watcher "/etc/s" {}>`,
		`<config-watcher "/etc/s" {config: 1, x: "y"} extra>`,
		`<config-watcher 42 {}>`,
		`<config-watcher "/p" {"k": 1}>`,
		`<config-watcher "/p">`,
		`<config-watcher>`,
		`[1 2]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		v, err := preserves.ParseText(src)
		if err != nil {
			return
		}
		w, err := parseName(v)
		if err != nil {
			return
		}
		path, env := w.path, w.env
		r := v.(*preserves.Record)
		if preserves.String(path) != r.Fields[0] {
			t.Fatalf("path %q from %s", path, src)
		}
		d := r.Fields[1].(*preserves.Dictionary)
		if len(env) != d.Len() {
			t.Fatalf("env has %d bindings, dictionary %d", len(env), d.Len())
		}
		for k, val := range env {
			got, ok := d.Get(preserves.Symbol(k))
			if !ok || !preserves.Equal(got, val) {
				t.Fatalf("binding %s lost", k)
			}
		}
	})
}

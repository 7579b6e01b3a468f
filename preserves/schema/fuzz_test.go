package schema_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/syndicate-go/syndicate/preserves/schema"
)

// FuzzReadModule: no schema text makes the reader or the generator panic;
// what reads either generates or fails with ErrSchema. Seeds are the
// protocol schemas; run with -fuzz on demand.
func FuzzReadModule(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(protocolDir, "*.prs"))
	for _, p := range files {
		if src, err := os.ReadFile(p); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte("version 1 . A = <a @b [int ...] @c {k: #:any}> / #{symbol} & B . B = A ."))
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := schema.ReadModule("f.prs", src, schema.ModulePath{"f"})
		if err != nil {
			return
		}
		_ = m.Value()
		_, _ = schema.Generate(&schema.Bundle{Modules: []*schema.Module{m}}, schema.Options{ImportPrefix: "example.com/f"})
	})
}

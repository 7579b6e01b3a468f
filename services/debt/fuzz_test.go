package debt

import (
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/preserves"
)

// FuzzParse: any request either parses to a sane period or is refused,
// never a panic or a period below a millisecond.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`<debt-reporter 1.0>`, `<debt-reporter "x">`, `<debt-reporter 1>`, `<debt-reporter>`,
		`<debt-reporter 1e-9>`, `<debt-reporter 1e300>`, `<debt-reporter -1.0>`, `<debt-reporter @a 0.5>`, `[1.0]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		v, err := preserves.ParseText(src)
		if err != nil {
			return
		}
		d, err := internalservices.DebtPeriod(preserves.Strip(v))
		ok := err == nil
		if ok && d < time.Millisecond {
			t.Fatalf("parse(%s) = %v", src, d)
		}
		if !ok && d != 0 {
			t.Fatalf("refused %s with a period %v", src, d)
		}
	})
}

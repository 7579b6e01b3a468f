package script_test

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/script"
)

// FuzzParse: any input yields a usable File and a sorted list of errors,
// each with the file's name in its position; never a panic.
func FuzzParse(f *testing.F) {
	if src, err := os.ReadFile("testdata/errors.pr"); err == nil {
		for _, chunk := range strings.Split(string(src), "\n---\n") {
			f.Add([]byte(chunk))
		}
	}
	f.Add([]byte("<* $x [<or [<rewrite <a ?x> <* $x [<reject $x>]>>]>]>"))
	f.Fuzz(func(t *testing.T, src []byte) {
		file, errs := script.ParseFile("z.pr", src)
		if file == nil {
			t.Fatal("nil File")
		}
		if !sort.IsSorted(errs) {
			t.Fatalf("errors not sorted: %v", errs)
		}
		for _, e := range errs {
			if !strings.HasPrefix(e.Error(), "z.pr") {
				t.Fatalf("error without position: %v", e)
			}
		}
	})
}

package daemon

import (
	"testing"
	"unicode/utf8"

	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
)

// Issue 22: a line holding the byte \377 made the status record a String
// that is not UTF-8, and the admin connection failed on it. The bad bytes
// become U+FFFD.
func TestServiceOutputIsUTF8(t *testing.T) {
	v := ServiceOutput(dname("e"), []Line{{Text: []byte("a\xffb\n"), Stream: Stdout}})
	out, err := syndicatego.ParseServiceOutput(v)
	if err != nil || len(out.Lines) != 1 {
		t.Fatalf("%v %v", out, err)
	}
	if l := out.Lines[0].Line; !utf8.ValidString(l) || l != "a\uFFFDb" {
		t.Errorf("line %q", l)
	}
	if !utf8.ValidString(preserves.FormatText(v)) {
		t.Error("text form not UTF-8")
	}
}

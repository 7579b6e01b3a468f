package http

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	httpschema "github.com/syndicate-go/syndicate/dataspace/schemas/http"
	"github.com/syndicate-go/syndicate/preserves"
)

// FuzzStaticPath: whatever the request path (elements separated by `|`
// here, so that elements may contain `/`) and N, the static file server
// never answers with a file outside DIR, and answers with one of its
// statuses.
func FuzzStaticPath(f *testing.F) {
	root := f.TempDir()
	www := filepath.Join(root, "www")
	os.MkdirAll(filepath.Join(www, "sub"), 0o755)
	os.WriteFile(filepath.Join(www, "a.txt"), []byte("public"), 0o644)
	os.WriteFile(filepath.Join(root, "secret.txt"), []byte("SECRET"), 0o644)
	for _, s := range []string{"a.txt", "..|secret.txt", "sub|..|..|secret.txt", "sub|", "", "a.txt/../../secret.txt", ".|a.txt"} {
		f.Add(s, uint8(0))
		f.Add("x|"+s, uint8(1))
	}
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		path := strings.Split(s, "|")
		msgs := staticResponse(www, int(n%4), path, nil)
		code := msgs[0].(*preserves.Record).Fields[0].(preserves.Int)
		switch code {
		case 200, 301, 403, 404, 500:
		default:
			t.Fatalf("status %d", code)
		}
		last := msgs[len(msgs)-1].(*preserves.Record).Fields[0].(preserves.ByteString)
		if strings.Contains(string(last), "SECRET") {
			t.Fatalf("%q escaped DIR", path)
		}
	})
}

// FuzzRouteParsing feeds arbitrary values to the request and binding
// parsers and the path matcher: no panics; a binding without a handler
// capability is refused; a pattern without `...` only matches paths of its
// own length.
func FuzzRouteParsing(f *testing.F) {
	f.Add(`<http-request 0 "h" 80 get ["a" "b"] {} {} #"">`, `["a" _]`)
	f.Add(`<http-request 0 #f 80 post [""] {} {} #"">`, `["a" ...]`)
	f.Add(`<http-request 0 1 80 get [1] {} {} #"">`, `[_ "x"]`)
	f.Fuzz(func(t *testing.T, reqText, patText string) {
		reqv, err := preserves.ParseText(reqText)
		if err != nil {
			return
		}
		q, err := httpschema.ParseHttpRequest(reqv)
		if err != nil {
			return
		}
		patv, err := preserves.ParseText(patText)
		if err != nil {
			return
		}
		no := preserves.Bool(false)
		if _, err := parseBinding(80, preserves.NewRecord(httpschema.LabelHttpBind, no, preserves.Int(80), no, patv, no)); err == nil {
			t.Fatal("a binding without a handler capability parsed")
		}
		pat, err := httpschema.ParsePathPattern(patv)
		if err != nil {
			return
		}
		hasRest := false
		for _, e := range pat {
			_, rest := e.(httpschema.PathPatternElementRest)
			hasRest = hasRest || rest
		}
		if !hasRest && pathMatches(pat, q.Path) && len(pat) != len(q.Path) {
			t.Fatalf("%s matched %q", patText, q.Path)
		}
	})
}

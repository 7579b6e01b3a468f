package http

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
// parsers and the path matcher: no panics; a parsed binding's path
// pattern holds only strings, `_` and `...`; a pattern without `...` only
// matches paths of its own length.
func FuzzRouteParsing(f *testing.F) {
	f.Add(`<http-request 0 "h" 80 get ["a" "b"] {} {} #"">`, `["a" _]`)
	f.Add(`<http-request 0 #f 80 post [""] {} {} #"">`, `["a" ...]`)
	f.Add(`<http-request 0 1 80 get [1] {} {} #"">`, `[_ "x"]`)
	f.Fuzz(func(t *testing.T, reqText, patText string) {
		reqv, err := preserves.ParseText(reqText)
		if err != nil {
			return
		}
		q, ok := parseRequest(reqv)
		if !ok {
			return
		}
		patv, err := preserves.ParseText(patText)
		if err != nil {
			return
		}
		b, err := parseBinding(80, []preserves.Value{preserves.Bool(false), preserves.Bool(false), patv, preserves.Bool(false)})
		if err == nil {
			t.Fatal("a binding without a handler capability parsed")
		}
		_ = b
		pat, ok := patv.(preserves.Sequence)
		if !ok {
			return
		}
		valid, hasRest := true, false
		for _, e := range pat {
			switch e := e.(type) {
			case preserves.String:
			case preserves.Symbol:
				hasRest = hasRest || e == symRest
				valid = valid && (e == symRest || e == symWildcard)
			default:
				valid = false
			}
		}
		if valid && !hasRest && pathMatches(pat, q.path) && len(pat) != len(q.path) {
			t.Fatalf("%s matched %q", patText, q.path)
		}
	})
}

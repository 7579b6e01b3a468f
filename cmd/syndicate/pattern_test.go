package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

func TestParsePattern(t *testing.T) {
	cases := []struct {
		pat   string
		value string
		match bool
		caps  []string
	}{
		{"_", "<anything 1>", true, nil},
		{"<daemon ?>", "<daemon web>", true, []string{"web"}},
		{"<daemon _>", `<daemon web "spec">`, true, nil},
		{"<daemon ?id>", "<milestone web>", false, nil},
		{"[?a _ ?c]", "[1 2 3 4]", true, []string{"1", "3"}},
		{"{port: ?p}", `{host: "h", port: 80}`, true, []string{"80"}},
		{"<x =_ =?y ==>", "<x _ ?y =>", true, nil},
		{"<x =_>", "<x 1>", false, nil},
		{`<s "str" 1.5 #t #"b">`, `<s "str" 1.5 #t #"b">`, true, nil},
		// The script language's binder record, and its literal keys.
		{"<daemon <?id [_ _]>>", "<daemon [a b]>", true, []string{"[a b]"}},
		{"{?k: 1}", "{?k: 1}", true, nil},
	}
	for _, c := range cases {
		p, err := parsePattern(c.pat)
		require.NoError(t, err, c.pat)
		v, err := preserves.ParseText(c.value)
		require.NoError(t, err)
		caps, ok := pattern.Match(p, v)
		require.Equal(t, c.match, ok, "%s vs %s", c.pat, c.value)
		if ok {
			var got []string
			for _, x := range caps {
				got = append(got, preserves.FormatText(x))
			}
			require.Equal(t, c.caps, got, c.pat)
		}
	}
}

func TestBadPatternsAndValues(t *testing.T) {
	for pat, want := range map[string]string{
		"<$x 1>":       "bad pattern at 1:2: a variable has no value in a pattern outside a script",
		"{k: [$v]}":    "bad pattern at 1:6: a variable has no value in a pattern outside a script",
		"<_ 1>":        "bad pattern at 1:2: discard _ is not allowed in a record pattern label",
		"[1\n #{2}]":   "bad pattern at 2:2: sets are not allowed in a pattern",
		"<unclosed":    "bad pattern at 1:10:",
		"":             "bad pattern",
		"<a> <b>":      "bad pattern at 1:5:",
		"#:<embedded>": "bad pattern at 1:1: embedded values are not allowed in patterns",
	} {
		_, err := parsePattern(pat)
		require.Error(t, err, pat)
		require.True(t, strings.HasPrefix(err.Error(), want), "%q: %v", pat, err)
	}
	for text, at := range map[string]string{
		"<a #:<b>>":          "1:4",
		"[1 [2 #:x]]":        "1:7",
		`{k: [#:"v"]}`:       "1:6",
		`{#:"k": 1, z: #:y}`: "1:15", // entries in Preserves order: z first
		"#{1 #:s}":           "1:5",
	} {
		_, err := parseValue(text)
		require.EqualError(t, err, "bad value at "+at+": embedded values cannot be written on the command line", text)
	}
	_, err := parseValue(`<a [1 {k: "v"}]>`)
	require.NoError(t, err)
}

func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"<daemon ?>", "[_ ?x {k: ?v}]", "<?x 1>", "#{1}", "=?x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePattern(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "bad pattern") {
				t.Fatalf("error not about the pattern: %v", err)
			}
			return
		}
		// A parsed pattern is a valid dataspace pattern.
		if _, err := pattern.FromValue(pattern.ToValue(p)); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	})
}

func TestUsageAndFmtStdin(t *testing.T) {
	code, out, _ := cliRun(t, "help")
	require.Equal(t, 0, code)
	for _, c := range (&cli{}).commands() {
		name, _, _ := strings.Cut(c.use, " ")
		require.Contains(t, out, "  "+name+" ")
	}
	code, _, errs := cliRun(t)
	require.Equal(t, 2, code)
	require.Contains(t, errs, "Usage:\n  syndicate [flags]")

	var o, e testutil.Buffer
	code = runCtx(t.Context(), []string{"fmt"}, strings.NewReader("<a>   <b>"), &o, &e)
	require.Equal(t, 0, code, e.String())
	require.Equal(t, "<a>\n<b>\n", o.String())
}

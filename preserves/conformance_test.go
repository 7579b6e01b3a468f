package preserves_test

// The conformance suite (testdata/samples.pr and testdata/samples.bin, copies
// of the upstream Preserves test data) declares 186 cases. TestConformance
// runs each as a subtest named after the case, with one subtest per numbered
// expectation (spec §5.2). The text expectations (5, 6, 20–22) are checked
// here; the binary ones (1–4, 7, 8, 30–32) by checkBinaryExpectations in
// conformance_binary_test.go.

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// suiteCase is one test case of the suite. Every field except
// annotatedValue has been stripped of annotations (bytes2a annotates its
// binary field).
type suiteCase struct {
	name  string
	kind  string          // record label: Test, ParseError, …
	av    preserves.Value // Test/NondeterministicTest: annotatedValue (annotations kept)
	bin   []byte          // Test/Nondeterministic: binary; Decode*: bytes
	text  string          // Parse*: text
	entry preserves.Value // the whole test record as read, for diagnostics
}

func readSuiteFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadSuite parses samples.pr with annotations and returns the document and
// its cases in key order.
func loadSuite(t testing.TB) (preserves.Value, []suiteCase) {
	t.Helper()
	src := readSuiteFile(t, "samples.pr")
	doc, err := preserves.ParseTextOptions(src, preserves.TextOptions{File: "samples.pr", Annotations: true})
	if err != nil {
		t.Fatalf("parsing samples.pr: %v", err)
	}
	top, ok := preserves.Unwrap(doc).(*preserves.Record)
	if !ok || !preserves.Equal(top.Label, preserves.Symbol("TestCases")) || len(top.Fields) != 1 {
		t.Fatalf("samples.pr: expected <TestCases {…}>, got %.200v", doc)
	}
	dict, ok := preserves.Unwrap(top.Fields[0]).(*preserves.Dictionary)
	if !ok {
		t.Fatalf("samples.pr: TestCases field is not a dictionary")
	}
	var cases []suiteCase
	for _, e := range dict.Entries() {
		name, ok := preserves.Strip(e.Key).(preserves.Symbol)
		if !ok {
			t.Fatalf("case key %v is not a symbol", e.Key)
		}
		rec, ok := preserves.Unwrap(e.Value).(*preserves.Record)
		if !ok {
			t.Fatalf("case %s is not a record", name)
		}
		label, _ := preserves.Strip(rec.Label).(preserves.Symbol)
		c := suiteCase{name: string(name), kind: string(label), entry: e.Value}
		field := func(i int) preserves.Value {
			if i >= len(rec.Fields) {
				t.Fatalf("case %s: %s record has %d fields", name, label, len(rec.Fields))
			}
			return preserves.Strip(rec.Fields[i])
		}
		switch c.kind {
		case "Test", "NondeterministicTest":
			c.bin = []byte(field(0).(preserves.ByteString))
			_ = field(1)
			c.av = rec.Fields[1]
		case "ParseError", "ParseShort", "ParseEOF":
			c.text = string(field(0).(preserves.String))
		case "DecodeError", "DecodeShort", "DecodeEOF":
			c.bin = []byte(field(0).(preserves.ByteString))
		default:
			t.Fatalf("case %s: unknown case type %q", name, label)
		}
		cases = append(cases, c)
	}
	return doc, cases
}

func TestConformanceSuiteShape(t *testing.T) {
	_, cases := loadSuite(t)
	counts := map[string]int{}
	for _, c := range cases {
		counts[c.kind]++
	}
	want := map[string]int{"Test": 127, "NondeterministicTest": 6, "ParseError": 37, "ParseShort": 7,
		"ParseEOF": 1, "DecodeError": 6, "DecodeShort": 1, "DecodeEOF": 1}
	if len(cases) != 186 {
		t.Errorf("%d cases, want 186", len(cases))
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%d %s cases, want %d", counts[k], k, n)
		}
	}
}

var errPosRE = regexp.MustCompile(`^\d+:\d+: \S`)

func TestConformance(t *testing.T) {
	_, cases := loadSuite(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			switch c.kind {
			case "Test", "NondeterministicTest":
				st := preserves.Strip(c.av)
				t.Run("5", func(t *testing.T) { checkTextRoundTrip(t, st, false) })
				t.Run("6", func(t *testing.T) { checkTextRoundTrip(t, c.av, true) })
			case "ParseError":
				t.Run("20", func(t *testing.T) { checkParseFails(t, c.text, preserves.ErrSyntax) })
			case "ParseShort":
				t.Run("21", func(t *testing.T) { checkParseFails(t, c.text, preserves.ErrUnexpectedEOF) })
			case "ParseEOF":
				t.Run("22", func(t *testing.T) { checkParseFails(t, c.text, preserves.ErrEmpty) })
			}
			checkBinaryExpectations(t, c)
		})
	}
}

// checkTextRoundTrip: decodeText(encodeText(v)) = v, for the compact writer
// and for the indented writer, compared with annotations.
func checkTextRoundTrip(t *testing.T, v preserves.Value, annotated bool) {
	t.Helper()
	for _, indent := range []string{"", "  "} {
		var text string
		if indent == "" {
			text = preserves.FormatText(v)
		} else {
			text = preserves.FormatTextIndent(v, indent)
		}
		back, err := preserves.ParseTextOptions([]byte(text), preserves.TextOptions{Annotations: true})
		if err != nil {
			t.Fatalf("reading back %q: %v", text, err)
		}
		if d := testutil.DiffAnnotated(back, v); d != "" {
			t.Fatalf("text %q reads back differently: %s", text, d)
		}
		if !annotated && preserves.HasAnnotations(back) {
			t.Fatalf("text %q of a stripped value read back with annotations", text)
		}
	}
}

// checkParseFails: decodeText(text) fails with exactly the given class.
func checkParseFails(t *testing.T, text string, class error) {
	t.Helper()
	v, err := preserves.ParseTextOptions([]byte(text), preserves.TextOptions{Annotations: true})
	if err == nil {
		t.Fatalf("parsing %q succeeded with %v", text, v)
	}
	for _, other := range []error{preserves.ErrSyntax, preserves.ErrUnexpectedEOF, preserves.ErrEmpty, preserves.ErrLimit} {
		if errors.Is(err, other) != (other == class) {
			t.Fatalf("parsing %q: error %q has the wrong class (want %v)", text, err, class)
		}
	}
	var pe *preserves.Error
	if !errors.As(err, &pe) || !pe.Pos.IsValid() {
		t.Fatalf("parsing %q: error %v carries no position", text, err)
	}
	if !errPosRE.MatchString(err.Error()) {
		t.Fatalf("parsing %q: error %q not printed as line:col: message", text, err)
	}
	if pe.Pos.Offset > len(text) {
		t.Fatalf("parsing %q: error offset %d beyond the input", text, pe.Pos.Offset)
	}
}

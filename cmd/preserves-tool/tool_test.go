package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// runTool runs the command in-process with the given stdin.
func runTool(t *testing.T, stdin []byte, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	status = run(args, bytes.NewReader(stdin), &out, &errb)
	return status, out.String(), errb.String()
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The conformance suite's text file converts to exactly its binary file, and
// back to text that reads as the same annotated value.
func TestTextToBinaryMatchesSuite(t *testing.T) {
	text, bin := readTestdata(t, "samples.pr"), readTestdata(t, "samples.bin")
	status, out, errs := runTool(t, text, "-i", "text", "-o", "binary")
	if status != 0 || errs != "" {
		t.Fatalf("status %d, stderr %q", status, errs)
	}
	if out != string(bin) {
		t.Fatalf("text→binary differs from samples.bin (%d vs %d bytes)", len(out), len(bin))
	}
	// auto-detected binary input back to indented text
	status, out, errs = runTool(t, bin, "-indent")
	if status != 0 || errs != "" {
		t.Fatalf("binary→text: status %d, stderr %q", status, errs)
	}
	if !strings.Contains(out, "\n  ") {
		t.Error("indented output has no indented lines")
	}
	back, err := preserves.ParseTextOptions([]byte(out), preserves.TextOptions{Annotations: true})
	if err != nil {
		t.Fatalf("reading the tool's text: %v", err)
	}
	enc, err := preserves.EncodeBinary(back, preserves.EncodeOptions{Annotations: true})
	if err != nil || !bytes.Equal(enc, bin) {
		t.Fatalf("binary→text→binary changed the document (err %v)", err)
	}
}

func TestCanonicalAndStrip(t *testing.T) {
	in := []byte(`@"note" {b: 1 aa: #{2 1}} <r @x 3>`)
	status, out, errs := runTool(t, in, "-o", "canonical")
	if status != 0 || errs != "" {
		t.Fatalf("status %d, stderr %q", status, errs)
	}
	vs, err := preserves.ReadAllText(in, preserves.TextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, v := range vs {
		want = preserves.AppendCanonical(want, v)
	}
	if out != string(want) {
		t.Errorf("canonical output\n got % X\nwant % X", out, want)
	}
	status, out, _ = runTool(t, in, "-strip")
	got, err := preserves.ReadAllText([]byte(out), preserves.TextOptions{Annotations: true})
	if status != 0 || err != nil || len(got) != 2 || strings.Count(out, "\n") != 2 || strings.Contains(out, "@") {
		t.Fatalf("stripped text: status %d, %q, %v", status, out, err)
	}
	for i := range got {
		if !preserves.Equal(got[i], vs[i]) || got[i] != preserves.Strip(got[i]) {
			t.Errorf("stripped value %d = %v, want %v", i, got[i], vs[i])
		}
	}
	status, out, _ = runTool(t, in)
	if status != 0 || !strings.Contains(out, `@"note"`) || !strings.Contains(out, "@x 3") {
		t.Errorf("annotations lost: %q", out)
	}
	status, out, _ = runTool(t, in, "-o", "binary", "-strip")
	if status != 0 || out != string(want) {
		t.Errorf("stripped binary should be canonical: % X", out)
	}
}

func TestFilesAndStdin(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.pr")
	b := filepath.Join(dir, "b.bin")
	if err := os.WriteFile(a, []byte("1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, preserves.EncodeCanonical(preserves.Symbol("three")), 0o644); err != nil {
		t.Fatal(err)
	}
	status, out, errs := runTool(t, []byte(`"four"`), a, b, "-")
	if status != 0 || errs != "" || out != "1\n2\nthree\n\"four\"\n" {
		t.Errorf("status %d, out %q, stderr %q", status, out, errs)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	badBin := filepath.Join(dir, "bad.bin")
	if err := os.WriteFile(badBin, []byte{0xB5, 0xB0, 0x00, 0x88, 0x84}, 0o644); err != nil {
		t.Fatal(err)
	}
	badText := filepath.Join(dir, "bad.pr")
	if err := os.WriteFile(badText, []byte("[1\n  2 }"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		stdin  string
		status int
		prefix string
	}{
		{"binary syntax", []string{badBin}, "", 1, badBin + ": offset 3: "},
		{"binary premature end", []string{"-i", "binary"}, "\xB5\xB0", 1, "<stdin>: offset 2: "},
		{"text syntax", []string{badText}, "", 1, badText + ":2:5: "},
		{"text premature end", nil, "<a", 1, "<stdin>:1:"},
		{"missing file", []string{filepath.Join(dir, "nope")}, "", 1, "preserves-tool: "},
		{"bad output flag", []string{"-o", "xml"}, "", 2, "preserves-tool: unknown output syntax"},
		{"bad input flag", []string{"-i", "json"}, "", 2, "preserves-tool: unknown input syntax"},
		{"unknown flag", []string{"-frobnicate"}, "", 2, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, errs := runTool(t, []byte(tt.stdin), tt.args...)
			if status != tt.status {
				t.Errorf("status %d, want %d (stderr %q)", status, tt.status, errs)
			}
			if !strings.HasPrefix(errs, tt.prefix) {
				t.Errorf("stderr %q, want prefix %q", errs, tt.prefix)
			}
		})
	}
	// Values before the error are still written.
	status, out, _ := runTool(t, []byte("1 2 ]"))
	if status != 1 || out != "1\n2\n" {
		t.Errorf("status %d, out %q", status, out)
	}
}

func TestHelp(t *testing.T) {
	status, _, errs := runTool(t, nil, "-h")
	if status != 0 || !strings.Contains(errs, "usage: preserves-tool") {
		t.Errorf("status %d, stderr %q", status, errs)
	}
}

//go:build e2e

package main

// End-to-end test: build the real binary and run it as a user would. Run with
//
//	go test -race -tags e2e ./cmd/...

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestBinaryEndToEnd(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "preserves-tool")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	text, err := os.ReadFile(filepath.Join("..", "..", "testdata", "samples.pr"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "testdata", "samples.bin"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-o", "binary")
	cmd.Stdin = bytes.NewReader(text)
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("text→binary: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("text→binary differs from samples.bin")
	}
	cmd = exec.Command(bin)
	cmd.Stdin = strings.NewReader("[1 2")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("bad input: %v", err)
	}
	if !strings.HasPrefix(stderr.String(), "<stdin>:1:") {
		t.Errorf("stderr %q", stderr.String())
	}
}

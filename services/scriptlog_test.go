package services

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
)

func TestMarkScript(t *testing.T) {
	for in, want := range map[string]string{
		`<log "-" {line: "x"}>`:                                 `<log "-" {line: "x", source: script}>`,
		`<log "-" {line: "x", source: daemon, service: <d a>}>`: `<log "-" {line: "x", service: <d a>, source: script}>`,
		`<log "-" "not a dict">`:                                `<log "-" "not a dict">`,
		`<other {source: daemon}>`:                              `<other {source: daemon}>`,
	} {
		v, err := preserves.ParseText(in)
		require.NoError(t, err)
		require.Equal(t, want, preserves.FormatText(MarkScript(v)), in)
	}
}

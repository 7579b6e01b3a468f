package example_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
	"github.com/syndicate-go/syndicate/preserves/schema/example/draw"
)

// A plain value whose places are kept in the position side table (as
// scripts compiled with positions build them): a failing atom is reported
// at its own place, found through its parent compound (schema.AtIn).
func TestParseErrorLocatesPlainAtoms(t *testing.T) {
	for _, c := range []struct {
		parse func(preserves.Value) error
		src   string
		want  string
	}{
		{func(v preserves.Value) error { _, err := draw.ParseLayer(v); return err },
			`<layer "l" #t [[1.0 "no"]] #{} #:0>`, "f.pr:1:21"},
		{func(v preserves.Value) error { _, err := draw.ParseStyle(v); return err },
			"{stroke: red\n width: wide}", "f.pr:2:9"},
		{func(v preserves.Value) error { _, err := draw.ParseNames(v); return err },
			`{"a": [1.0 2.0], "b": [1.0 x]}`, "f.pr:1:28"},
	} {
		read, err := preserves.ParseTextOptions([]byte(c.src), preserves.TextOptions{File: "f.pr", Positions: true})
		require.NoError(t, err)
		err = c.parse(preserves.StripRemembering(read))
		var pe *schema.ParseError
		require.True(t, errors.As(err, &pe), "%s: %v", c.src, err)
		require.Equal(t, c.want, pe.Deepest().Pos.String(), "%s: %v", c.src, err)
	}
}

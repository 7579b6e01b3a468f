package preserves_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
)

// An unclosed compound is reported where it was opened as well as where
// the reader noticed (operator issue: an unclosed `<tcp 18080` used to be
// reported on the next line as "unexpected ':'", with no word of where
// the record opened).
func TestUnclosedCompoundNamesItsOpening(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src string
		class     error
		want      string
	}{
		{"record at EOF", "[1\n  <tcp 18080\n", preserves.ErrUnexpectedEOF,
			"app.pr:3:1: unexpected end of input in record: the record opened at app.pr:2:3 is not closed"},
		{"record inside a dictionary", "{\n  listen: <tcp 18080\n  user: web\n}\n", preserves.ErrSyntax,
			"app.pr:3:7: unexpected ':', in the record opened at app.pr:2:11"},
		{"sequence", "<a [1 2\n", preserves.ErrUnexpectedEOF,
			"app.pr:2:1: unexpected end of input in sequence: the sequence opened at app.pr:1:4 is not closed"},
		{"dictionary", "{a: 1 b: 2", preserves.ErrUnexpectedEOF,
			"app.pr:1:11: unexpected end of input in dictionary: the dictionary opened at app.pr:1:1 is not closed"},
		{"dictionary value", "{a: ", preserves.ErrUnexpectedEOF,
			"app.pr:1:5: unexpected end of input: expected a value: the dictionary opened at app.pr:1:1 is not closed"},
		{"set", "#{1 2", preserves.ErrUnexpectedEOF,
			"app.pr:1:6: unexpected end of input in set: the set opened at app.pr:1:1 is not closed"},
		{"wrong closer", "<a [1 2>", preserves.ErrSyntax,
			"app.pr:1:8: unexpected '>', in the sequence opened at app.pr:1:4"},
		{"innermost of several", "<a\n <b\n  [x]\n", preserves.ErrUnexpectedEOF,
			"app.pr:4:1: unexpected end of input in record: the record opened at app.pr:2:2 is not closed"},
		// Inside an atom, the atom is what is unclosed: no compound named.
		{"string in a record", "<a \"xy", preserves.ErrUnexpectedEOF,
			"app.pr:1:7: unexpected end of input in string"},
		// Outside any compound nothing is added.
		{"top level", ":", preserves.ErrSyntax, "app.pr:1:1: unexpected ':'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, opts := range []preserves.TextOptions{{File: "app.pr"}, {File: "app.pr", Annotations: true, Positions: true}} {
				_, err := preserves.ReadAllText([]byte(c.src), opts)
				require.ErrorIs(t, err, c.class)
				require.EqualError(t, err, c.want)
			}
		})
	}
}

// The open position is structured, not only text.
func TestUnclosedCompoundOpenPos(t *testing.T) {
	t.Parallel()
	_, err := preserves.ParseTextOptions([]byte("\n\n   <x 1"), preserves.TextOptions{File: "f.pr"})
	var pe *preserves.Error
	require.True(t, errors.As(err, &pe))
	require.Equal(t, preserves.Pos{File: "f.pr", Offset: 5, Line: 3, Col: 4}, pe.Open)
	require.Equal(t, "record", pe.OpenWhat)
}

// SourceOrder writes a dictionary's entries in the order the reader found
// them (Positions mode), and canonically otherwise.
func TestWriterSourceOrder(t *testing.T) {
	t.Parallel()
	src := []byte("{z: 1, a: {y: 2 b: 3}, m: 4}")
	pos, err := preserves.ParseTextOptions(src, preserves.TextOptions{Annotations: true, Positions: true})
	require.NoError(t, err)
	plain, err := preserves.ParseText(string(src))
	require.NoError(t, err)
	keep := preserves.WriterOptions{Indent: "  ", SourceOrder: true}
	require.Equal(t, "{z: 1, a: {y: 2, b: 3}, m: 4}", string(preserves.AppendIndented(nil, pos, 0, keep)))
	require.Equal(t, "{a: {b: 3, y: 2}, m: 4, z: 1}", string(preserves.AppendIndented(nil, pos, 0, preserves.WriterOptions{Indent: "  "})))
	require.Equal(t, "{a: {b: 3, y: 2}, m: 4, z: 1}", string(preserves.AppendIndented(nil, plain, 0, keep)), "no positions: canonical")
}

package preserves_test

import (
	"fmt"
	"io"
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
)

func ExampleParseText() {
	v, err := preserves.ParseText(`<says "alice" [1 2.5 #t {k: #"bytes"}]>`)
	if err != nil {
		panic(err)
	}
	rec := v.(*preserves.Record)
	fmt.Println(rec.Label, len(rec.Fields))
	fmt.Println(v)
	// Output:
	// says 2
	// <says "alice" [1 2.5 #t {k: #"bytes"}]>
}

func ExampleNewTextReader() {
	src := "# first\n<a 1>\n<b 2> @note <c 3>\n"
	r := preserves.NewTextReader(strings.NewReader(src), preserves.TextOptions{File: "demo.pr", Annotations: true, Positions: true})
	for {
		v, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		a := v.(*preserves.Annotated)
		fmt.Println(a.Pos, preserves.Strip(v), a.Anns)
	}
	// Output:
	// demo.pr:2:1 <a 1> ["first"]
	// demo.pr:3:1 <b 2> []
	// demo.pr:3:13 <c 3> [note]
}

func ExampleFormatTextIndent() {
	v, err := preserves.ParseTextOptions([]byte(`# the app
<daemon app {argv: ["/usr/bin/app" "--config" "/etc/app/config.pr" "--verbose"] protocol: none}>`),
		preserves.TextOptions{Annotations: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(preserves.FormatTextIndent(v, "  "))
	// Output:
	// # the app
	// <daemon app {
	//   argv: ["/usr/bin/app" "--config" "/etc/app/config.pr" "--verbose"]
	//   protocol: none
	// }>
}

func ExampleError() {
	_, err := preserves.ParseTextOptions([]byte("[1 2\n 3 }"), preserves.TextOptions{File: "bad.pr"})
	fmt.Println(err)
	// Output:
	// bad.pr:2:4: unexpected '}', in the sequence opened at bad.pr:1:1
}

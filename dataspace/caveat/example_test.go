package caveat_test

import (
	"encoding/base64"
	"fmt"

	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/preserves"
)

func ExampleMint() {
	sr := caveat.Mint(preserves.Symbol("a-service"), []byte("hello"))
	fmt.Println(base64.StdEncoding.EncodeToString(sr.Sig))
	fmt.Println(sr.Validate([]byte("hello")) == nil, sr.Validate([]byte("wrong")) == nil)
	// Output:
	// JTTGQeYCgohMXW/2S2XH8g==
	// true false
}

func ExampleApply() {
	v, _ := preserves.ParseText("<rewrite <rec foo [<bind <_>>]> <rec bar [<ref 0>]>>")
	c, _ := caveat.FromValue(v)
	cs := []caveat.Caveat{c}
	if err := caveat.Validate(cs); err != nil {
		fmt.Println(err)
		return
	}
	out, ok := caveat.Apply(cs, preserves.Rec("foo", preserves.Int(1)))
	fmt.Println(out, ok)
	_, ok = caveat.Apply(cs, preserves.Rec("foo", preserves.Int(1), preserves.Int(2)))
	fmt.Println(ok)
	// Output:
	// <bar 1> true
	// false
}

package preserves_test

import (
	"errors"
	"fmt"

	"github.com/syndicate-go/syndicate/preserves"
)

func ExampleEncodeCanonical() {
	// Dictionary entries are ordered by the bytes of their keys' encodings:
	// shorter strings first.
	v := preserves.NewDictionary(
		preserves.DictEntry{Key: preserves.String("aa"), Value: preserves.Int(1)},
		preserves.DictEntry{Key: preserves.String("b"), Value: preserves.Int(2)},
	)
	fmt.Printf("% x\n", preserves.EncodeCanonical(v))
	// Output: b7 b1 01 62 b0 01 02 b1 02 61 61 b0 01 01 84
}

func ExampleDecodeBinary() {
	v, err := preserves.DecodeBinary([]byte{0xB4, 0xB3, 0x01, 'p', 0xB0, 0x01, 0x07, 0x84}, preserves.DecodeOptions{})
	fmt.Println(v, err)
	_, err = preserves.DecodeBinary([]byte{0xB5, 0xB0}, preserves.DecodeOptions{})
	fmt.Println(err, errors.Is(err, preserves.ErrUnexpectedEOF))
	// Output:
	// <p 7> <nil>
	// offset 2: input ends inside a value true
}

func ExampleDecoder() {
	dec := preserves.NewDecoder(preserves.DecodeOptions{})
	stream := preserves.EncodeCanonical(preserves.Sequence{preserves.Symbol("hello"), preserves.Int(1)})
	for _, b := range stream { // bytes arrive one at a time
		dec.Write([]byte{b})
		v, err := dec.Next()
		if errors.Is(err, preserves.ErrUnexpectedEOF) {
			continue // need more bytes
		}
		fmt.Println(v, err)
	}
	// Output: [hello 1] <nil>
}

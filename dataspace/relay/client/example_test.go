package client_test

import (
	"context"
	"log"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay/client"
	"github.com/syndicate-go/syndicate/preserves"
)

// Connecting to a server's relay listener, resolving a sturdy ref at its
// gatekeeper, and asserting into the dataspace it grants.
func Example() {
	sys := dataspace.NewSystem(dataspace.Options{})
	defer sys.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	conn, gk, err := client.Dial(ctx, sys, "localhost:9001")
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	ref, err := preserves.ParseText(`<ref {oid: "x" sig: #[JTTGQeYCgohMXW/2S2XH8g==]}>`)
	if err != nil {
		log.Fatal(err)
	}
	ds, release, err := client.Resolve(ctx, sys, gk, ref)
	if err != nil {
		log.Fatal(err)
	}
	defer release()

	sys.Spawn("app", func(t *dataspace.Turn) error {
		t.Assert(ds, preserves.Rec("present", preserves.String("me")))
		t.PreventInertCheck() // keep the assertion up
		return nil
	})
}

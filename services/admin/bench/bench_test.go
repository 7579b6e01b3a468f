package bench

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A loopback TCP listener is found in /proc; other addresses are not
// local.
func TestServerPIDByAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	require.Equal(t, os.Getpid(), serverPIDByAddress(fmt.Sprintf(`<tcp "127.0.0.1" %d>`, port)))
	require.Zero(t, serverPIDByAddress(`<tcp "192.0.2.1" 9001>`))
	require.Zero(t, serverPIDByAddress(""))
}

func TestHistogram(t *testing.T) {
	for x := int64(0); x < 1<<20; x += 1 + x/7 {
		i := bucketOf(x)
		require.True(t, bucketLow(i) <= x && x < bucketLow(i+1), "%d in bucket %d [%d, %d)", x, i, bucketLow(i), bucketLow(i+1))
	}
	require.Less(t, bucketOf(1<<62), histBuckets)
	h := &histogram{}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		h.add(time.Duration(1+r.IntN(10000)) * time.Microsecond) // uniform 1µs..10ms
	}
	for _, q := range []float64{.5, .9, .99} {
		want := q * 10000
		got := float64(h.quantile(q)) / 1e3
		require.InEpsilon(t, want, got, 0.13, "q%v", q)
	}
	require.LessOrEqual(t, h.quantile(1), 10*time.Millisecond)
	require.Equal(t, uint64(100000), h.n.Load())
}

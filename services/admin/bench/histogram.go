package bench

// A latency histogram for `syndicate bench`: logarithmic buckets, eight per
// power of two (so a quantile is within 12.5% of the true value), counted
// with atomics so that every subscriber actor records into one histogram
// without a lock, and no sample is kept.

import (
	"fmt"
	"io"
	"math/bits"
	"strings"
	"sync/atomic"
	"time"
)

const (
	histSubBits = 3
	histSub     = 1 << histSubBits
	histBuckets = (64 - histSubBits + 1) * histSub
)

type histogram struct {
	counts [histBuckets]atomic.Uint64
	n      atomic.Uint64
	max    atomic.Int64
}

// bucketOf maps a duration in nanoseconds to its bucket: values below
// histSub have a bucket each; above, the power of two and the next
// histSubBits bits choose it.
func bucketOf(ns int64) int {
	if ns < histSub {
		return int(max(ns, 0))
	}
	e := bits.Len64(uint64(ns)) - 1 // ns in [2^e, 2^(e+1))
	sub := int(ns>>(e-histSubBits)) & (histSub - 1)
	return (e-histSubBits+1)*histSub + sub
}

// bucketLow is the smallest value of bucket i.
func bucketLow(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	e := i/histSub + histSubBits - 1
	sub := int64(i % histSub)
	return (histSub + sub) << (e - histSubBits)
}

func (h *histogram) add(d time.Duration) {
	ns := int64(d)
	h.counts[bucketOf(ns)].Add(1)
	h.n.Add(1)
	for {
		m := h.max.Load()
		if ns <= m || h.max.CompareAndSwap(m, ns) {
			return
		}
	}
}

// quantile returns the q-quantile (0 < q ≤ 1), as the middle of its
// bucket (the maximum for q = 1).
func (h *histogram) quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	if q >= 1 {
		return time.Duration(h.max.Load())
	}
	rank := uint64(q*float64(n-1)) + 1
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			lo, hi := bucketLow(i), bucketLow(i+1)
			return time.Duration(min(lo+(hi-lo)/2, h.max.Load()))
		}
	}
	return time.Duration(h.max.Load())
}

// write draws the histogram as bars over the occupied range, at most 24
// rows (neighbouring buckets merged when the range is wider).
func (h *histogram) write(w io.Writer) {
	first, last := -1, -1
	for i := range h.counts {
		if h.counts[i].Load() > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return
	}
	const rows = 24
	step := max(1, (last-first+rows)/rows)
	type row struct {
		lo, hi int64
		n      uint64
	}
	var rs []row
	var top uint64
	for i := first; i <= last; i += step {
		r := row{lo: bucketLow(i), hi: bucketLow(min(i+step, histBuckets-1))}
		for j := i; j < i+step && j <= last; j++ {
			r.n += h.counts[j].Load()
		}
		top = max(top, r.n)
		rs = append(rs, r)
	}
	for _, r := range rs {
		bar := int(r.n * 40 / top)
		if r.n > 0 && bar == 0 {
			bar = 1
		}
		fmt.Fprintf(w, "    %9s – %-9s %-40s %d\n", fmtLatency(time.Duration(r.lo)), fmtLatency(time.Duration(r.hi)), strings.Repeat("#", bar), r.n)
	}
}

// fmtLatency prints a latency with three significant digits.
func fmtLatency(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return trim3(float64(d)/1e3) + "µs"
	case d < time.Second:
		return trim3(float64(d)/1e6) + "ms"
	}
	return trim3(d.Seconds()) + "s"
}

func trim3(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// fmtCount prints a count or rate with an SI suffix (1.02M).
func fmtCount(x float64) string {
	switch {
	case x >= 1e9:
		return trim3(x/1e9) + "G"
	case x >= 1e6:
		return trim3(x/1e6) + "M"
	case x >= 1e3:
		return trim3(x/1e3) + "k"
	}
	return fmt.Sprintf("%.0f", x)
}

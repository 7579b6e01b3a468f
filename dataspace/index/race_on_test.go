//go:build race

package index

// raceDetector is true when the tests run under -race. The index starts no
// goroutines, so the detector has nothing to find here and only makes the
// randomized tests ~17× slower; they do fewer rounds then (the plain
// `go test` run keeps the full count).
const raceDetector = true

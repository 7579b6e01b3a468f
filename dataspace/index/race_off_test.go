//go:build !race

package index

// raceDetector: see race_on_test.go.
const raceDetector = false

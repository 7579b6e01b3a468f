package script

// SetStreamWindow sets ParseFileEach's window for a test and returns the
// function that restores it.
func SetStreamWindow(n int) (restore func()) {
	old := streamWindow
	streamWindow = n
	return func() { streamWindow = old }
}

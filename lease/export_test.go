package lease

// Defaults returns c as StartKeeper would run it, its zero fields filled,
// or the error StartKeeper would refuse it with.
func Defaults(c KeeperConfig) (KeeperConfig, error) {
	err := c.defaults()
	return c, err
}

// SetJitter makes the spare's waits (claimloop.go) draw f instead of a
// random number, until the test ends.
func SetJitter(t interface{ Cleanup(func()) }, f func() float64) {
	old := jitter
	jitter = f
	t.Cleanup(func() { jitter = old })
}

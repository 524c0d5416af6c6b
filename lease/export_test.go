package lease

// Defaults returns c as StartKeeper would run it, its zero fields filled,
// or the error StartKeeper would refuse it with.
func Defaults(c KeeperConfig) (KeeperConfig, error) {
	err := c.defaults()
	return c, err
}

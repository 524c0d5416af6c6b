package lease

// Defaults returns c as StartKeeper would run it, its zero fields filled,
// or the error StartKeeper would refuse it with.
func Defaults(c KeeperConfig) (KeeperConfig, error) {
	err := c.defaults()
	return c, err
}

// ForgetGenerator makes k forget the generator bound to it, as a process
// that crashed never tells its keeper what it issued: its Close then
// releases nothing lower than its reservation.
func (k *Keeper) ForgetGenerator() {
	k.mu.Lock()
	k.lastIssued = nil
	k.mu.Unlock()
}

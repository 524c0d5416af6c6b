package zkstore

// Check reports what New and Connect would refuse in cfg (lease.ErrInvalid,
// saying what to fix), without a session: for a caller that checks its
// configuration before it connects, as snowfence's flags are checked
// before serve starts.
func (cfg Config) Check() error {
	_, err := cfg.withDefaults()
	return err
}

//go:build linux

package etcdproc

import (
	"errors"

	"github.com/snowfence/snowfence/internal/testkit/freeport"
)

// attempts is how many times Start tries fresh ports before giving up.
const attempts = 5

// freePorts picks loopback ports; a member binding one may lose a race with
// another process, so Start retries on a bind failure (see addrInUse).
var freePorts = freeport.Loopback

// addrInUse reports whether err is a member exiting because another process
// held one of its ports.
func addrInUse(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && ee.AddrInUse()
}

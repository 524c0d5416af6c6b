package chaos

import (
	"syscall"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/harness/chaos/etcdproc"
)

const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

type snowfenceID = snowfence.ID

// restoreNewToken restores as an operator restoring a backup into a new
// cluster does: a new cluster token, so a new cluster ID.
var restoreNewToken = etcdproc.RestoreOptions{NewClusterToken: true}

package chaos

import (
	"context"
	"fmt"
	"io"

	"github.com/snowfence/snowfence/harness/chaos/etcdproc"
)

// Roles a harness child process plays; the harness binary re-executes
// itself with one of them as its first argument.
const (
	// RoleEtcdMember runs one member of the suite's etcd cluster.
	RoleEtcdMember = "etcd-member"
	// RoleHolder runs a library holder (see HolderMain).
	RoleHolder = "holder"
)

// ChildMain runs role with args and returns the process's exit code.
func ChildMain(ctx context.Context, role string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var err error
	switch role {
	case RoleEtcdMember:
		err = etcdproc.MemberMain(ctx, args, stdout, stderr)
	case RoleHolder:
		err = HolderMain(ctx, args, stdin, stdout, stderr)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", role, err)
		return 1
	}
	return 0
}

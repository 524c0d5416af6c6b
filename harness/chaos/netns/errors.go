package netns

import "errors"

var (
	// ErrUnavailable says network namespaces cannot be used on this machine:
	// not Linux, not root, no ip command, or the kernel refused.
	ErrUnavailable = errors.New("netns: network namespaces unavailable")

	// ErrInvalidName says a namespace name or prefix does not start with
	// Prefix or has characters outside [A-Za-z0-9._-].
	ErrInvalidName = errors.New("netns: invalid namespace name")

	// ErrInvalidAddress says an address is not a literal IP and port, or its
	// network is not TCP.
	ErrInvalidAddress = errors.New("netns: invalid address")

	// ErrClosed says the namespace or proxy has been closed.
	ErrClosed = errors.New("netns: closed")
)

// ErrNoQdisc says the kernel lacks a queueing discipline Impair asked for
// (tc answers "Specified qdisc kind is unknown"), such as netem on a
// kernel built without CONFIG_NET_SCH_NETEM.
var ErrNoQdisc = errors.New("netns: the kernel lacks this queueing discipline")

// Package loopback keeps the load-test tools on this machine: every address
// they listen on or send to must be on the loopback interface.
package loopback

import (
	"fmt"
	"net"
)

// Check returns an error unless addr (host:port) is on the loopback
// interface: 127.0.0.0/8, ::1 or "localhost". tool names the caller in the
// message.
func Check(tool, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: %q: %w", tool, addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: %q is not a loopback address; this tool stays on loopback", tool, addr)
	}
	return nil
}

package netns_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the process tests start inside a namespace:
// with childEnv set, TestMain runs that child instead of the tests.
const (
	childEnv = "SFCHAOS_NETNS_CHILD" // "dial" or "serve"
	addrEnv  = "SFCHAOS_NETNS_ADDR"  // where the dial child connects
	tokenEnv = "SFCHAOS_NETNS_TOKEN" // the line the serve child greets with
)

// Exit codes of the dial child.
const (
	exitRefused = 3 // the connection was refused
	exitFailed  = 4 // anything else went wrong
)

// childLife bounds how long a child process runs.
const childLife = time.Minute

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "dial":
		os.Exit(dialChild(os.Getenv(addrEnv)))
	case "serve":
		os.Exit(serveChild(os.Getenv(tokenEnv)))
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", childEnv, os.Getenv(childEnv))
		os.Exit(exitFailed)
	}
}

// dialChild connects to addr and prints the first line it reads there.
func dialChild(addr string) int {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		fmt.Printf("dial: %v\n", err)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return exitRefused
		}
		return exitFailed
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		fmt.Printf("read: %v\n", err)
		return exitFailed
	}
	fmt.Printf("read: %s", line)
	return 0
}

// serveChild listens on 127.0.0.1, prints the address, and greets each
// connection with token and then echoes it, until its standard input ends
// or childLife passes.
func serveChild(token string) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Printf("listen: %v\n", err)
		return exitFailed
	}
	fmt.Printf("listening %s\n", ln.Addr())
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(childLife))
				if _, err := io.WriteString(c, token+"\n"); err == nil {
					io.Copy(c, c)
				}
			}()
		}
	}()
	stdin := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stdin)
	}()
	select {
	case <-stdin:
	case <-time.After(childLife):
	}
	return 0
}

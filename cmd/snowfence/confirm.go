package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// terminalPrompt asks question on stderr and reads the answer from stdin
// when stdin is a terminal; nil otherwise (a script, a test, a pipe): a
// command that would ask then requires --yes instead.
func terminalPrompt(stdin *os.File, stderr io.Writer) func(question string) (bool, error) {
	if !isTerminal(stdin) {
		return nil
	}
	return func(question string) (bool, error) {
		fmt.Fprintf(stderr, "%s [y/N] ", question)
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && line == "" {
			return false, fmt.Errorf("no answer read: %w", err)
		}
		a := strings.ToLower(strings.TrimSpace(line))
		return a == "y" || a == "yes", nil
	}
}

// confirm goes ahead with what the plan printed says when yes (--yes) is
// given, or when the operator answers yes at a terminal; without a
// terminal it is a usage error naming --yes. what names the action, for
// the refusal.
func confirm(e env, yes bool, what string) error {
	if yes {
		return nil
	}
	if e.prompt == nil {
		return usagef("%s: see what it will do above; run it again with --yes to go ahead (there is no terminal to ask on)", what)
	}
	ok, err := e.prompt("go ahead?")
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: not done (answered no)", what)
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // bad arguments or input
)

// usageError marks an error as the caller's: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// env carries a command's streams and environment.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	// prompt asks the operator a yes-or-no question at a terminal; nil
	// without one (confirm then requires --yes).
	prompt func(question string) (bool, error)
}

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"serve":    {"run the ID service (HTTP), leasing a machine number", runServe},
		"decode":   {"decode an ID: snowfence decode <id | uuid> [--schedule …] [--json]", runDecode},
		"uuid":     {"print UUIDv7 values, one per line: snowfence uuid [-n N]", runUUID},
		"dups":     {"find IDs that occur more than once in files: snowfence dups FILE… [--column N|NAME] [--json]", runDups},
		"clock":    {"show the kernel's clock-sync state", runClock},
		"who":      {"which holder minted an ID, from the lease journal: snowfence who <id> [store flags]", runWho},
		"leases":   {"list, show, history, quarantine, release machine-number leases; raise marks after a restore", runLeases},
		"schedule": {"show or set the fleet's layout schedule, stored beside the leases", runSchedule},
		"regions":  {"list, add, retire regions in the region registry kept in every region's store; sync its copies", runRegions},
		"version":  {"print the version", runVersion},
	}
}

// Run runs the CLI with args (without the program name) and returns the exit
// status. Results go to stdout, diagnostics to stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return run(ctx, args, env{stdout: stdout, stderr: stderr, getenv: os.Getenv, prompt: terminalPrompt(os.Stdin, stderr)})
}

func run(ctx context.Context, args []string, e env) int {
	stdout, stderr := e.stdout, e.stderr
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout, cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "snowfence: unknown command %q; run \"snowfence help\"\n", args[0])
		return exitUsage
	}
	err := c.run(ctx, e, args[1:])
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "snowfence %s: %s\n", args[0], cliMessage(err))
		return exitUsage
	default:
		fmt.Fprintf(stderr, "snowfence %s: %s\n", args[0], cliMessage(err))
		return exitError
	}
}

// cliMessage is err's text without the library's own "snowfence: "
// prefix, which the command's "snowfence NAME: " already says.
func cliMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "snowfence: ")
}

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: snowfence <command> [arguments]\n\ncommands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, cmds[n].summary)
	}
}

// newFlags returns a flag set that reports errors instead of exiting and
// prints its defaults only when asked with -h.
func newFlags(e env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("snowfence "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// isFlag reports whether arg is a flag rather than a positional argument
// such as a negative number (which decode rejects with a proper message).
func isFlag(arg string) bool {
	return len(arg) > 1 && arg[0] == '-' && (arg[1] < '0' || arg[1] > '9')
}

// parse parses flags that may come before or after positional arguments
// parseVerb is parse, then the flags' environment variables (applyEnv), for
// a command of verbs: it returns the first positional argument and the
// rest, or usage as a usage error when there is none.
func parseVerb(e env, fs *flag.FlagSet, args []string, usage string) (verb string, rest []string, err error) {
	pos, err := parse(e, fs, args)
	if err != nil {
		return "", nil, err
	}
	if err := applyEnv(fs, e.getenv); err != nil {
		return "", nil, err
	}
	if len(pos) == 0 {
		return "", nil, usagef("%s", usage)
	}
	return pos[0], pos[1:], nil
}

// ("decode 123 --json" and "decode --json 123") and returns the positionals.
func parse(e env, fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		for len(args) > 0 && !isFlag(args[0]) && args[0] != "--" {
			pos = append(pos, args[0])
			args = args[1:]
		}
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(e.stdout, "usage of %s (every flag may be given in its environment variable instead; the command line wins):\n", fs.Name())
				fs.VisitAll(func(f *flag.Flag) { f.Usage += " [$" + envName(f.Name) + "]" })
				fs.SetOutput(e.stdout)
				fs.PrintDefaults()
				return nil, err
			}
			return nil, usageError{err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
	}
}

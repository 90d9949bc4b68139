// Command allot is the inventory reservation engine and its bench.
//
// main only wires things: each subcommand lives in its own file, parses its
// flags into a typed config, validates it and calls into a package.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand. run gets the arguments after the subcommand's
// name and returns an error to print; errors of type exitError carry their
// own exit code.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("allot: command " + c.name + " registered twice")
	}
	commands[c.name] = c
}

// exitError is an error with an exit code; its message (if any) has already
// been printed or is printed by main.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usage(w io.Writer) {
	fmt.Fprintf(w, "allot: an inventory reservation engine, and a bench that runs the same\nreservation workload on other datastores.\n\nUsage:\n  allot <command> [flags]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'allot help <command>' or 'allot <command> --help' for a command's flags.\n")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		if len(args) > 2 {
			fmt.Fprintf(stderr, "allot %s: unexpected argument %q (want at most one command)\n", args[0], args[2])
			return 2
		}
		if len(args) == 2 && args[1] != "help" {
			// allot help <command> (or --help <command>) is allot
			// <command> --help.
			if _, ok := commands[args[1]]; !ok {
				fmt.Fprintf(stderr, "allot help: unknown command %q\n\n", args[1])
				usage(stderr)
				return 2
			}
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "allot: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	err := c.run(args[1:], stdout, stderr)
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(stderr, "allot %s: %s\n", c.name, ee.msg)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "allot %s: %v\n", c.name, strings.TrimPrefix(err.Error(), "allot: "))
	return 1
}

// newFlagSet returns a flag set for a subcommand whose --help prints the
// summary, the usage line and every flag with its default.
func newFlagSet(name, usageLine, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("allot "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: allot %s %s\n\n%s\n\nFlags:\n", name, usageLine, about)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and rejects stray positional arguments. --help
// prints the usage to stdout (so that it pages) and returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			fs.SetOutput(stdout)
			fs.Usage()
			return flag.ErrHelp
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &exitError{code: 2}
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("unexpected argument %q (flags go before nothing else; see --help)", fs.Arg(0))}
	}
	return nil
}

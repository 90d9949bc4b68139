package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"allot/report"
)

func init() {
	register(command{
		name:    "report",
		summary: "write a self-contained HTML report from a bench results file",
		run:     runReport,
	})
}

func runReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", "<results.json> [-o report.html]",
		"Reads a results file written by 'allot bench --out' and writes one HTML page\n"+
			"that opens offline: the comparison table, throughput over time, the latency\n"+
			"percentile spectrum, sweep curves, the checks, the environment, and the\n"+
			"published figures for the same workload beside the measured ones.", stderr)
	out := fs.String("o", "", "the HTML file to write (default: the results file's name with .html; - for standard output)")
	inputs, err := parseInterleaved(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(inputs) != 1 {
		return &exitError{code: 2, msg: fmt.Sprintf("want exactly one results file, got %d (see --help)", len(inputs))}
	}
	in := inputs[0]
	f, err := report.ReadResultsFile(in)
	if err != nil {
		return err
	}
	var page bytes.Buffer
	if err := report.WriteHTML(&page, f); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	target := *out
	if target == "" {
		target = strings.TrimSuffix(in, filepath.Ext(in)) + ".html"
		if target == in {
			target = in + ".html"
		}
	}
	if target == "-" {
		_, err := stdout.Write(page.Bytes())
		return err
	}
	if err := writeFileAtomic(target, page.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%d runs)\n", target, len(f.Runs))
	return nil
}

// parseInterleaved parses flags that may come before, after or between
// positional arguments ("allot report results.json -o report.html"), which
// the flag package alone stops at, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			return nil, parseFlags(fs, []string{a}, stdout)
		}
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, &exitError{code: 2}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if rest[0] == "--" {
			return append(positional, rest[1:]...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it over path, so a failure never leaves a half-written report behind.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this finds nothing
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, errors.Unwrap(err))
	}
	return nil
}

package main

import (
	"bufio"
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
	if sameFile(in, target) {
		return &exitError{code: 2, msg: fmt.Sprintf("-o %s is the results file itself: writing the page there would destroy the results", target)}
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

// sameFile reports whether a and b name one existing file (through links
// or different spellings of the path).
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it over path, so a failure never leaves a half-written file behind (see
// writeFileAtomicFunc).
func writeFileAtomic(path string, data []byte) error {
	return writeFileAtomicFunc(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeFileAtomicFunc writes what write writes to a temporary file beside
// path and renames it over path, so a failure never leaves a half-written
// file behind. A symbolic link is followed, so that the file it names is
// replaced and the link kept. What is not a regular file (a device such as
// /dev/null, a FIFO) and a link into /proc (/dev/stdout, /dev/fd/N: an open
// file descriptor) are written into as a shell redirection would, since
// renaming over them would replace the device or the link itself.
func writeFileAtomicFunc(path string, write func(io.Writer) error) error {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return writeFileDirect(path, write)
	}
	target, ok := followLinks(path)
	if !ok {
		return writeFileDirect(path, write)
	}
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this finds nothing
	bw := bufio.NewWriterSize(tmp, 1<<16)
	if err := write(bw); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
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
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("writing %s: %w", path, errors.Unwrap(err))
	}
	return nil
}

// followLinks returns the path a chain of symbolic links at path ends in,
// whether or not that exists (a link may name a file not written yet), or
// path itself when it is no link. ok is false when the chain goes through
// /proc, whose links name open files rather than paths, or cannot be read.
func followLinks(path string) (target string, ok bool) {
	for range 40 { // the kernel's own bound on a chain of links
		if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
			path = filepath.Join(dir, filepath.Base(path))
		}
		if path == "/proc" || strings.HasPrefix(path, "/proc/") {
			return path, false
		}
		st, err := os.Lstat(path)
		if err != nil || st.Mode()&os.ModeSymlink == 0 {
			return path, true
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return path, false
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return path, false // a loop: opening path says so
}

// writeFileDirect writes into path, as os.Create would: a device or a FIFO
// holds nothing that could be left half-written, and /dev/stdout names
// whatever the caller redirected it to, which is theirs to replace.
func writeFileDirect(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := write(bw); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

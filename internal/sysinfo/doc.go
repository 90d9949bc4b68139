// Package sysinfo describes the machine a bench ran on: CPU model and core
// count, memory, operating system and kernel, Go version, and the git commit
// of allot itself. The results file stores it beside every run so that a
// figure is never read without the hardware and code that produced it.
//
// Invariants: Collect never fails. A fact it cannot learn is left at its zero
// value (or "unknown" for the commit) rather than guessed, because a results
// file that claims the wrong hardware is worse than one that says it does not
// know.
//
// It must never: write anything, need network access, or take more than a
// moment (the only subprocess is one bounded git call, and only when the
// binary carries no version-control stamp).
package sysinfo

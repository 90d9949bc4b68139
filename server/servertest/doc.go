// Package servertest is what allot's tests need to run real servers:
// Start runs an engine in a temporary directory and a server on 127.0.0.1
// ports chosen by the kernel, in-process, both stopped when the test ends;
// BuildAllot builds the allot binary once per test process, for tests that
// run allot serve as a child process; RequireTool finds redis-cli and
// redis-benchmark, installing Debian's redis-tools when missing and root.
//
// Invariants: every server, engine and binary a test gets is cleaned up by
// the test's Cleanup or by Main; a missing tool fails the test under
// CI=true and skips it otherwise, saying why.
//
// It must never be imported by non-test code.
package servertest

// Package vfs is the narrow seam between allot's journal and the disk.
//
// FS has three implementations: OS (the real file system), Mem (in memory,
// for tests, with a model of what is durable: Crash drops every write that
// was not followed by a Sync), and Faulty (wraps another FS and injects
// errors, torn writes and corrupt bytes on demand).
//
// The journal talks to disk only through FS, so every failure the journal
// must survive can be produced in a test. This package must never buffer
// writes on its own: Write reaches the operating system before it returns,
// and Sync means fdatasync.
package vfs

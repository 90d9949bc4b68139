// Package vfs is the narrow seam between allot's journal and the disk.
//
// FS has three implementations: OS (the real file system), Mem (in memory,
// for tests, with a model of the page cache and of the namespace: at a
// power cut CrashPages keeps an arbitrary subset of the pages written
// since the last Sync, whole or torn, and Crash a prefix of the unsynced
// bytes, and both keep each directory's entries as of its last SyncDir;
// CrashProcess keeps the page cache and the entries, still unsynced; with
// EnableMapping files map, and writes through a mapping are unsynced page
// cache too), and Faulty (wraps another FS and injects errors, torn writes
// and held syncs on demand; a failed Sync leaves its pages clean but not
// durable, as Linux does, SyncFailer).
//
// The journal talks to disk only through FS, so every failure the journal
// must survive can be produced in a test. This package must never buffer
// writes on its own: Write reaches the operating system before it returns,
// and Sync means fdatasync.
package vfs

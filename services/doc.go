// Package services starts, stops and inspects the project's private
// instances of the peer servers the bench compares allot with: PostgreSQL,
// MariaDB, Redis, Tarantool and RabbitMQ, from Debian's packages.
//
// Each server listens on 127.0.0.1 only, on a fixed non-default port
// (PostgreSQL 15432, MariaDB 13306, Redis 16379, Tarantool 13301, RabbitMQ
// 14672 with its own Erlang port mapper on 14674), and keeps
// its data, socket, log and pid file under one directory, Config.Dir/<name>
// (by default <module root>/.allot/services/<name>). Up installs missing
// Debian packages when run as root, starts what is not running, waits until
// a real client connection succeeds, and creates the accounts named by the
// connection constants (PostgresDSN, MariaDBDSN, RedisAddr, TarantoolAddr).
// apt runs in the C locale; an `apt-get update` that fails (one broken
// source) is logged and the install goes on from the lists apt has; when
// the install of every missing package fails, each server's are installed
// apart, and only a server whose packages cannot be had is not started. The
// files and folders Up makes for a server are 0644 and 0755 whatever the
// umask.
//
// PostgreSQL and MariaDB run as their system users (postgres, mysql) when
// we are root, in a folder given to that user. When that user cannot walk
// into Config.Dir (a checkout in a private home, a 0700 temporary folder),
// those two servers live in /var/tmp/allot-services-<hash of Config.Dir>
// instead; Status shows the folder.
//
// Invariants:
//   - Up is idempotent: a server that already runs from our directory is
//     left running (its durability is adjusted at runtime where the server
//     allows it; Tarantool, whose wal_mode is fixed at start, is restarted);
//     one stopped by a signal (Pause) is continued.
//   - Up and Down of one server hold an flock on Config.Dir/<name>.lock, so
//     that the test packages `go test ./...` runs at once can all ask for
//     the same server: one starts it, the others wait and find it running.
//   - Down signals a process only when its pid file is in our directory and
//     /proc says the pid is the expected server binary working in our
//     directory. A stale or foreign pid is never signalled.
//
// What this package must never do: touch a server it did not start (the
// machine's own instances on the standard ports included), listen on
// anything but loopback, or let a package install start Debian's default
// instances (a policy-rc.d that forbids starting services is in place while
// apt-get runs).
package services

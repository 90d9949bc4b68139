// Command respnull is the null server of scripts/perf: a RESP server that
// does no work, so that a redis-benchmark figure can be read against what
// the same client reaches when the server costs almost nothing.
//
// It answers PING with +PONG (PING <msg> with <msg>) and every other
// command with +OK, from one thread on one epoll loop, as Redis serves;
// there is no engine, no state and no per-command work beyond framing
// (allot's own RESP decoder, so a malformed frame is refused as allot
// refuses it). When allot's figure is close to respnull's at the same -c
// and -P, allot's own work is not what bounds it: the client, the loopback
// system calls and the wake-ups are. It is not a strict ceiling: at -P 1,
// where every request is a wake-up, Redis (in C, no Go scheduler) has
// measured above it in some runs and below in others.
//
//	go build -o respnull ./scripts/respnull
//	./respnull -addr 127.0.0.1:0   # prints "respnull: listening on ADDR"
//	./respnull -sync /path/file    # the null durable server (below)
//
// With -sync FILE it is the null durable server: at the end of every
// event-loop round that answered a command other than PING it writes an
// 8-byte record to FILE (preallocated, 64 MiB, written round and round)
// and fdatasyncs it before that round's replies go out, as Redis does
// with appendfsync always. It is the least a one-threaded server that
// acknowledges writes only once they are on disk can do, and so what the
// same client reaches against a durable server that does no other work:
// the figure to read allot's fsync mode against, beside the bound
// `allot bench` prints (ops in flight / (fdatasync + round trip)), which
// counts no CPU at all.
//
// Linux only (epoll). It is a measuring instrument, not a server: it
// holds nothing, and it stops on SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	syncPath := flag.String("sync", "", "journal file: fdatasync once per round that answered a write, before its replies (created or truncated)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "respnull: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "respnull: %v\n", err)
		os.Exit(1)
	}
	l, err := newLoop(ln.(*net.TCPListener))
	if err != nil {
		fmt.Fprintf(os.Stderr, "respnull: %v\n", err)
		os.Exit(1)
	}
	if *syncPath != "" {
		if l.journal, err = openJournal(*syncPath); err != nil {
			fmt.Fprintf(os.Stderr, "respnull: %v\n", err)
			os.Exit(1)
		}
		defer l.journal.close()
	}
	fmt.Printf("respnull: listening on %s\n", ln.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	errs := make(chan error, 1)
	go func() { errs <- l.run() }()
	select {
	case <-stop:
		l.close()
		<-errs
	case err := <-errs:
		fmt.Fprintf(os.Stderr, "respnull: %v\n", err)
		os.Exit(1)
	}
}

// Package epoll opens what an event loop waits on: an epoll set with an
// eventfd in it, for other goroutines to wake the loop with. allot's RESP
// event loop (server/resp_loop_linux.go) and scripts/respnull share it.
package epoll

import (
	"fmt"
	"syscall"
)

// Open returns an epoll set (close-on-exec) and a non-blocking eventfd
// watched by it for reading, with fds (each for reading) watched too.
// On an error nothing is left open.
func Open(fds ...int) (epfd, wake int, err error) {
	if epfd, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		return -1, -1, fmt.Errorf("epoll_create1: %w", err)
	}
	w, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if errno != 0 {
		syscall.Close(epfd)
		return -1, -1, fmt.Errorf("eventfd2: %w", errno)
	}
	wake = int(w)
	for _, fd := range append(fds, wake) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
		if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			syscall.Close(epfd)
			syscall.Close(wake)
			return -1, -1, fmt.Errorf("epoll_ctl add %d: %w", fd, err)
		}
	}
	return epfd, wake, nil
}

// Wake makes the loop's next (or current) wait on the eventfd return.
func Wake(wake int) {
	one := [8]byte{1}
	syscall.Write(wake, one[:])
}

// Wait waits without a timeout for events of the set, again when a signal
// interrupts it.
func Wait(epfd int, events []syscall.EpollEvent) (int, error) {
	for {
		n, err := syscall.EpollWait(epfd, events, -1)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

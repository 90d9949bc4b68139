package hrsleep

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timer is a non-blocking timerfd on CLOCK_MONOTONIC, read through the
// runtime's poller.
type timer struct {
	fd  int
	f   *os.File
	buf [8]byte
}

func newTimer() (*timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	// A non-blocking descriptor: os.NewFile registers it with the poller,
	// so a Read parks the goroutine, not the thread.
	return &timer{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}, nil
}

// sleep arms the timer to fire after d and waits for it.
func (t *timer) sleep(d time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(t.fd, 0, &spec, nil); err != nil {
		return err
	}
	n, err := t.f.Read(t.buf[:])
	if err == nil && n != len(t.buf) {
		err = errors.New("hrsleep: short read of the timer")
	}
	return err
}

func (t *timer) close() error { return t.f.Close() }

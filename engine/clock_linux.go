package engine

import (
	"syscall"
	"time"
)

// wallClock returns the wall clock's time without a monotonic reading:
// one gettimeofday through the vDSO, half what time.Now costs (22 against
// 45 ns here), since time.Now reads the monotonic clock too.
func wallClock() time.Time {
	var tv syscall.Timeval
	if err := syscall.Gettimeofday(&tv); err != nil {
		return time.Now()
	}
	return time.Unix(tv.Sec, tv.Usec*1000)
}

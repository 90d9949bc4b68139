//go:build !linux

package engine

import "time"

// wallClock returns the wall clock's time.
func wallClock() time.Time { return time.Now() }

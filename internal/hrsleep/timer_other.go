//go:build !linux

package hrsleep

import (
	"errors"
	"time"
)

type timer struct{}

func newTimer() (*timer, error) { return nil, errors.New("hrsleep: no timerfd on this system") }

func (t *timer) sleep(time.Duration) error { return errors.New("hrsleep: no timer") }

func (t *timer) close() error { return nil }

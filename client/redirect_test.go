package client

import (
	"errors"
	"fmt"
	"testing"
)

func TestPrimaryOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		addr string
		ok   bool
	}{
		{&ServerError{Msg: "UNAVAILABLE not primary, primary at 127.0.0.1:7379", class: ErrUnavailable}, "127.0.0.1:7379", true},
		{fmt.Errorf("op: %w", &ServerError{Msg: "UNAVAILABLE not primary, primary at [::1]:7379", class: ErrUnavailable}), "[::1]:7379", true},
		{&ServerError{Msg: "UNAVAILABLE not primary, primary unknown", class: ErrUnavailable}, "", false},
		{&ServerError{Msg: "UNAVAILABLE engine: closed", class: ErrUnavailable}, "", false},
		{&ServerError{Msg: "UNKNOWN not primary, primary at x:1", class: ErrOutcomeUnknown}, "", false},
		{errors.New("UNAVAILABLE not primary, primary at x:1"), "", false},
		{nil, "", false},
	} {
		addr, ok := PrimaryOf(c.err)
		if addr != c.addr || ok != c.ok {
			t.Errorf("PrimaryOf(%v) = %q, %v; want %q, %v", c.err, addr, ok, c.addr, c.ok)
		}
	}
}

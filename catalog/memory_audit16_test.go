package catalog

import (
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// titleBuffer returns a title over a buffer of its own and a channel that
// is closed once the buffer is garbage.
func titleBuffer(s string) (string, chan struct{}) {
	buf := make([]byte, len(s))
	copy(buf, s)
	freed := make(chan struct{})
	runtime.SetFinalizer(&buf[0], func(*byte) { close(freed) })
	return unsafe.String(&buf[0], len(buf)), freed
}

func collected(freed chan struct{}) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		runtime.GC()
		select {
		case <-freed:
			return true
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false
}

// A record keeps its title once, in its entry's text (sku, title, folded
// title in one allocation). Taking the address of the Set argument's
// Attributes field to keep the attributes kept the whole argument alive,
// and with it the caller's title, SKU and brand strings: a record with
// attributes cost the size of its title again (384 bytes more than one
// without, for a 248-byte title and one attribute, where the attributes
// themselves take under 64).
func TestSetKeepsNoCallerString(t *testing.T) {
	for _, attrs := range [][]Attribute{nil, {{Name: "colour", Value: "red"}}} {
		c := New()
		title, freed := titleBuffer("Caller's title " + strings.Repeat("x", 200))
		if d := c.Set(Record{SKU: "s1", Title: title, Brand: "Acme", Attributes: attrs}); d != "" {
			t.Fatal(d)
		}
		title = ""
		if !collected(freed) {
			t.Errorf("with %d attributes: the catalog still holds the caller's title string after Set", len(attrs))
		}
		if r, ok := c.Get("s1"); !ok || r.Title != "Caller's title "+strings.Repeat("x", 200) || len(r.Attributes) != len(attrs) {
			t.Fatalf("record now %+v %v", r, ok)
		}
		runtime.KeepAlive(c)
	}
}

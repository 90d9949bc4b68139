package catalog

import (
	"fmt"
	"sync"
	"testing"
	"unsafe"
)

// A Freeze is read on the snapshot writer's goroutine while the catalog
// keeps changing on the engine's (records replaced, deleted, added, brands
// emptied and back, searches setting links): it encodes what the catalog
// held when it was taken. Run with -race, the test also shows that the
// two goroutines share no memory one of them writes.
func TestFreezeReadWhileWriting(t *testing.T) {
	cat := New()
	for i := range 3000 {
		cat.Set(Record{SKU: fmt.Sprint("s", i), Title: fmt.Sprint("Titel ", i%97, " Straße"), Brand: fmt.Sprint("Brand", i%13),
			Attributes: []Attribute{{"colour", fmt.Sprint(i % 5)}}})
	}
	want := cat.AppendSnapshot(nil)
	frozen := cat.Freeze()
	var wg sync.WaitGroup
	got := make([][]byte, 4)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[g] = frozen.AppendSnapshot(nil)
		}()
	}
	link := 0
	for i := range 3000 {
		switch i % 3 {
		case 0:
			cat.Set(Record{SKU: fmt.Sprint("s", i), Title: fmt.Sprint("TITEL ", i%89), Brand: fmt.Sprint("brand", i%7)})
		case 1:
			cat.Delete(fmt.Sprint("s", i))
		default:
			cat.Set(Record{SKU: fmt.Sprint("new", i), Title: "neu", Brand: "Brand1"})
		}
		cat.SearchLinked(Query{Prefix: "titel", Brand: "b", Limit: 5}, func(_ string, l *unsafe.Pointer) int64 {
			*l = unsafe.Pointer(&link)
			return 1
		}, nil)
	}
	wg.Wait()
	for g := range got {
		if string(got[g]) != string(want) {
			t.Fatalf("reader %d: the frozen catalog encodes %d bytes unlike the %d at the freeze", g, len(got[g]), len(want))
		}
	}
}

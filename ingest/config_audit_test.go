package ingest

import (
	"fmt"
	"strings"
	"testing"

	"allot/catalog"
)

// Attributes the catalog cannot hold are refused at start, naming why: more
// than a record holds (every row was refused and its record deleted), and
// an attribute named ID in any case (CATALOG.SET takes a trailing ID pair
// as the request's idempotency key, so the snapshot's SETs lost it, or
// failed as a key reused with other arguments).
func TestConfigRefusesAttributesTheCatalogCannotHold(t *testing.T) {
	base := Config{DSN: "u:p@tcp(127.0.0.1:13306)/shop", Table: "p", SKUColumn: "sku", TitleColumn: "title", BrandColumn: "brand",
		Addr: "127.0.0.1:7379", StateFile: "/tmp/x", ServerID: 7}
	many := make([]string, catalog.AttributesMax+1)
	for i := range many {
		many[i] = fmt.Sprintf("a%d", i)
	}
	for _, tc := range []struct {
		attrs []string
		want  string
	}{
		{many, "at most 32"},
		{[]string{"colour", "id"}, "idempotency key"},
		{[]string{"Id", "colour"}, "idempotency key"},
	} {
		c := base
		c.Attributes = tc.attrs
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("attributes %v: %v; want a refusal saying %q", tc.attrs, err, tc.want)
		}
	}
	c := base
	c.Attributes = many[:catalog.AttributesMax]
	if err := c.Validate(); err != nil {
		t.Errorf("%d attributes: %v", catalog.AttributesMax, err)
	}
}

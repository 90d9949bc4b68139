package client

import (
	"fmt"
	"testing"

	"allot/inventory"
)

// A catalog get is a read: an attempt whose outcome is unknown (a dropped
// connection, an attempt timeout) may be repeated, as a get or a search
// may, so that the cluster's Router follows a failover for it too.
func TestRetryableCatalogGet(t *testing.T) {
	err := fmt.Errorf("read: connection reset: %w", ErrOutcomeUnknown)
	get := inventory.CatalogGet("sku-1")
	if !Retryable(&get, err) {
		t.Fatal("a catalog get whose outcome is unknown is not retryable")
	}
	set := inventory.CatalogDel("sku-1")
	if Retryable(&set, err) {
		t.Fatal("a catalog delete without a key whose outcome is unknown is retryable")
	}
}

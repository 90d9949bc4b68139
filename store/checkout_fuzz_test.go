package store

import (
	"slices"
	"testing"

	"allot/inventory"
)

func TestReplyRoundTrip(t *testing.T) {
	g := inventory.GroupKey{SKU: "ä sku", Condition: "new", Source: "own"}
	for _, r := range []HoldResult{
		{Code: CheckoutOK, ExpiresAtMS: 1700000000123, Lines: []HoldLine{{g.Row("w1"), 2}, {g.Row("w2"), 1}}},
		{Code: CheckoutInsufficient, Short: 3, Available: 17},
		{Code: CheckoutOK},
	} {
		var got HoldResult
		if err := DecodeReply(EncodeReply(&r), &got); err != nil {
			t.Fatal(err)
		}
		if got.Code != r.Code || got.ExpiresAtMS != r.ExpiresAtMS || got.Short != r.Short || got.Available != r.Available || !slices.Equal(got.Lines, r.Lines) {
			t.Fatalf("round trip of %+v gave %+v", r, got)
		}
	}
	for _, bad := range []string{"", "0\x1f1\x1f2", "0\x1f1\x1f2\x1e", "x\x1f0\x1f0\x1f0\x1e", "0\x1f0\x1f0\x1f0\x1ea\x1fb\x1e", "0\x1f0\x1f0\x1f0\x1ea\x1fb\x1fc\x1fd\x1f1"} {
		var got HoldResult
		if err := DecodeReply(bad, &got); err == nil {
			t.Errorf("DecodeReply(%q) accepted it", bad)
		}
	}
}

// FuzzDecodeReply: never panics, and what it accepts encodes back to
// something that decodes to the same reply.
func FuzzDecodeReply(f *testing.F) {
	g := inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}
	f.Add(EncodeReply(&HoldResult{Code: CheckoutOK, ExpiresAtMS: 5, Lines: []HoldLine{{g.Row("w"), 1}}}))
	f.Add(EncodeReply(&HoldResult{Code: CheckoutInsufficient, Short: 1, Available: 2}))
	f.Add("0\x1f0\x1f0\x1f0\x1e")
	f.Fuzz(func(t *testing.T, s string) {
		var r HoldResult
		if err := DecodeReply(s, &r); err != nil {
			return
		}
		var again HoldResult
		if err := DecodeReply(EncodeReply(&r), &again); err != nil {
			t.Fatalf("re-decoding %q: %v", EncodeReply(&r), err)
		}
		if again.Code != r.Code || again.ExpiresAtMS != r.ExpiresAtMS || !slices.Equal(again.Lines, r.Lines) {
			t.Fatalf("round trip changed %+v into %+v", r, again)
		}
	})
}

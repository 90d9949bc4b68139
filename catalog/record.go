package catalog

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of a record. Title, brand and SKU limits are part of the wire
// contract (DESIGN.md); the attribute limits are this package's choice: a
// record is a small map of facts about a product (colour, size, material),
// not a document store, and a bound on every field keeps a record's memory
// and its journal frame bounded (at most about 10.5 KB of attributes).
const (
	// SKUBytesMax is the identifier rule's maximum.
	SKUBytesMax = 64
	// TextBytesMax bounds a title and a brand (and a search prefix).
	TextBytesMax = 256
	// AttributesMax bounds the number of attributes of one record.
	AttributesMax = 32
	// AttributeNameBytesMax bounds an attribute's name (identifier rule).
	AttributeNameBytesMax = 64
	// AttributeValueBytesMax bounds an attribute's value; a value may be
	// empty.
	AttributeValueBytesMax = 256
)

// Attribute is one name/value pair of a record.
type Attribute struct {
	Name  string
	Value string
}

// Record is one catalog entry. Attributes are kept sorted by name, without
// duplicates (Normalize does that).
type Record struct {
	SKU        string
	Title      string
	Brand      string
	Attributes []Attribute
}

// CheckText reports what is wrong with s as a text of 1..max bytes of UTF-8
// without control characters, or "" when it is valid. It is the identifier
// rule of the domain with another maximum. The detail is a constant string
// (apart from the maximum) so that checking does not allocate.
func CheckText(s string, max int) string {
	if len(s) == 0 {
		return "is empty"
	}
	if len(s) > max {
		switch max {
		case SKUBytesMax:
			return "is longer than 64 bytes"
		case TextBytesMax:
			return "is longer than 256 bytes"
		}
		return "is too long"
	}
	return checkRunes(s)
}

func checkRunes(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return "contains a control character"
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return "is not valid UTF-8"
		}
		if unicode.IsControl(r) {
			return "contains a control character"
		}
		i += size - 1
	}
	return ""
}

// Normalize sorts the attributes by name (stable, so that Check can still
// name a duplicate). It is what Set does to a copy of its argument.
func (r *Record) Normalize() {
	slices.SortStableFunc(r.Attributes, func(a, b Attribute) int { return strings.Compare(a.Name, b.Name) })
}

// Check reports what is wrong with r, or "" when it is valid. It expects
// r.Attributes sorted (Normalize), and reports a duplicate name.
func (r *Record) Check() string {
	if d := CheckText(r.SKU, SKUBytesMax); d != "" {
		return "sku " + d
	}
	if d := CheckText(r.Title, TextBytesMax); d != "" {
		return "title " + d
	}
	if d := CheckText(r.Brand, TextBytesMax); d != "" {
		return "brand " + d
	}
	if len(r.Attributes) > AttributesMax {
		return "has more than 32 attributes"
	}
	for i, a := range r.Attributes {
		if d := CheckText(a.Name, AttributeNameBytesMax); d != "" {
			return "attribute name " + d
		}
		if len(a.Value) > AttributeValueBytesMax {
			return "attribute " + a.Name + " value is longer than 256 bytes"
		}
		if d := checkRunes(a.Value); d != "" {
			return "attribute " + a.Name + " value " + d
		}
		if i > 0 && r.Attributes[i-1].Name == a.Name {
			return "attribute " + a.Name + " is given twice"
		}
		if i > 0 && r.Attributes[i-1].Name > a.Name {
			return "attributes are not sorted by name"
		}
	}
	return ""
}

// AttributeIDReserved is the detail of a request refused by
// CheckReservedNames.
const AttributeIDReserved = "attribute name id is reserved: RESP reads a trailing ID pair as the idempotency key"

// CheckReservedNames reports an attribute named id, in any ASCII case, or
// "". CATALOG.SET's attributes and its idempotency key are both trailing
// pairs, so RESP reads a last pair named ID as the key where HTTP stored an
// attribute: the name is reserved, and both front ends refuse a new record
// that uses it (RESP wherever the pair stands).
//
// It is not part of Check. Check also runs on records decoded from a
// snapshot and on catalog.set ops replayed from the journal, which may
// hold such an attribute written before the name was reserved (HTTP took
// it, and RESP when the pair was not the last): refusing them there would
// make those data directories unreadable.
func (r *Record) CheckReservedNames() string {
	for _, a := range r.Attributes {
		if len(a.Name) == 2 && (a.Name[0]|0x20) == 'i' && (a.Name[1]|0x20) == 'd' {
			return AttributeIDReserved
		}
	}
	return ""
}

// Equal reports whether two records are the same.
func (r *Record) Equal(o *Record) bool {
	return r.SKU == o.SKU && r.Title == o.Title && r.Brand == o.Brand &&
		slices.Equal(r.Attributes, o.Attributes)
}

// Clone returns a deep copy of r whose strings share nothing with caller
// buffers that might be reused (strings are immutable; the slice is new).
func (r *Record) Clone() Record {
	c := *r
	c.Attributes = slices.Clone(r.Attributes)
	return c
}

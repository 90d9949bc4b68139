package server

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"allot/inventory"
	"allot/server/resp"
)

// HTTP request bodies are decoded field by field from json.RawMessage so
// that every failure names its field: "quantity must be an integer from 1
// to 2147483647" rather than encoding/json's "cannot unmarshal number 1.5
// into Go struct field". Unknown fields are refused (a typo in "quantity"
// must not become a missing quantity silently), numbers must be plain
// integers (no fraction, no exponent, no quotes).

// bodyFields lists the fields of each body, in the order errors are checked.
var (
	captureFields = []string{"sku", "condition", "source", "quantity"}
	releaseFields = []string{"sku", "warehouse", "condition", "source", "quantity"}
	stockFields   = []string{"sku", "warehouse", "condition", "source", "count", "price"}
)

// decodeBody parses a JSON object with exactly the given fields. It returns
// the raw value of each field, or what was wrong.
func decodeBody(body []byte, fields []string) (map[string]json.RawMessage, string) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, "body is empty: want a JSON object with " + fieldList(fields)
	}
	if body[0] != '{' {
		return nil, "body must be a JSON object with " + fieldList(fields)
	}
	// Member by member: a map would keep the last of two members with
	// one name without a word ({"sku":"a","sku":"b"} captured b).
	dec := json.NewDecoder(bytes.NewReader(body))
	invalid := func(err error) string {
		if err == io.EOF { // the body ended inside the object
			err = io.ErrUnexpectedEOF
		}
		return "body is not valid JSON: " + jsonError(err)
	}
	m := make(map[string]json.RawMessage, len(fields))
	if _, err := dec.Token(); err != nil {
		return nil, invalid(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalid(err)
		}
		name, _ := tok.(string) // a member's name is a string, or Token failed
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, invalid(err)
		}
		if _, dup := m[name]; dup {
			return nil, "field " + strconv.Quote(name) + " is given twice"
		}
		m[name] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, invalid(err)
	}
	// Nothing but white space may follow. (dec.More is no test of it: it
	// answers false for a '}' or ']', and a body with "}x" after its
	// object was applied.)
	if _, err := dec.Token(); err != io.EOF {
		return nil, "body has data after the JSON object"
	}
	for k := range m {
		known := false
		for _, f := range fields {
			if k == f {
				known = true
				break
			}
		}
		if !known {
			return nil, "unknown field " + strconv.Quote(k) + ": want " + fieldList(fields)
		}
	}
	for _, f := range fields {
		if _, ok := m[f]; !ok {
			return nil, f + " is missing"
		}
	}
	return m, ""
}

func fieldList(fields []string) string {
	var b []byte
	for i, f := range fields {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendQuote(b, f)
	}
	return string(b)
}

func jsonError(err error) string {
	// encoding/json errors start with "json: "; the detail says JSON already.
	s := err.Error()
	if len(s) > 6 && s[:6] == "json: " {
		s = s[6:]
	}
	return s
}

func stringField(m map[string]json.RawMessage, name string) (string, string) {
	raw := m[name]
	if len(raw) == 0 || raw[0] != '"' {
		return "", name + " must be a string"
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", name + " must be a string"
	}
	if replaced(raw, s) {
		return "", name + " is not valid UTF-8"
	}
	return s, ""
}

// replaced reports whether decoding the raw JSON string raw gave s with a
// replacement in it. encoding/json turns bytes that are not UTF-8, and a
// lone surrogate escape, into U+FFFD without an error: an identifier
// would then name another row, group or hold than the one sent, a title
// would be stored other than sent, where RESP refuses the same bytes. A
// U+FFFD the client did not send is such a replacement.
func replaced(raw []byte, s string) bool {
	n := strings.Count(s, "\uFFFD")
	return n > 0 && n > replacementsSent(raw)
}

// replacementsSent counts the U+FFFD a raw JSON string holds as sent: the
// character itself, or its escape.
func replacementsSent(raw []byte) int {
	n := 0
	for i := 0; i < len(raw); i++ {
		switch {
		case raw[i] == '\\':
			if i+5 < len(raw) && raw[i+1] == 'u' && resp.EqualFold(raw[i+2:i+6], "FFFD") {
				n++
				i += 5
			} else {
				i++ // the escaped character
			}
		case bytes.HasPrefix(raw[i:], []byte("\uFFFD")):
			n++
			i += len("\uFFFD") - 1
		}
	}
	return n
}

// intField parses a JSON integer. A field that is not a plain integer gets
// the domain's range message (what the client must send) when it names one.
func intField(m map[string]json.RawMessage, name string, rangeDetail string) (int64, string) {
	raw := m[name]
	v, ok := resp.ParseInt(raw)
	if !ok {
		if rangeDetail != "" {
			return 0, rangeDetail
		}
		return 0, name + " must be an integer"
	}
	return v, ""
}

// decodeOpBody decodes the body of an op request into op and checks it as
// the RESP front end does. It returns "" or what was wrong.
func decodeOpBody(kind inventory.Kind, body []byte, op *inventory.Op) string {
	var fields []string
	switch kind {
	case inventory.KindCapture:
		fields = captureFields
	case inventory.KindRelease:
		fields = releaseFields
	case inventory.KindStock:
		fields = stockFields
	default:
		return "no body expected"
	}
	m, detail := decodeBody(body, fields)
	if detail != "" {
		return detail
	}
	*op = inventory.Op{Kind: kind}
	for _, f := range fields {
		var d string
		switch f {
		case "sku":
			op.Key.SKU, d = stringField(m, f)
		case "warehouse":
			op.Key.Warehouse, d = stringField(m, f)
		case "condition":
			op.Key.Condition, d = stringField(m, f)
		case "source":
			op.Key.Source, d = stringField(m, f)
		case "quantity":
			op.N, d = intField(m, f, inventory.CheckQuantity(0))
		case "count":
			op.N, d = intField(m, f, inventory.CheckCount(-1))
		case "price":
			op.Price, d = intField(m, f, inventory.CheckPrice(-1))
		}
		if d != "" {
			return d
		}
	}
	return op.Check()
}

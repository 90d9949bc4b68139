package server

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"allot/catalog"
	"allot/inventory"
	"allot/server/resp"
)

// The catalog over HTTP (DESIGN.md, "Catalog and search"):
//
//	PUT    /v1/catalog/{sku}  {"title","brand","attributes":{}}  200 the record   (Idempotency-Key header)
//	GET    /v1/catalog/{sku}  200 {"sku","title","brand","attributes":{}} | 404 {"error":"not_found"}
//	DELETE /v1/catalog/{sku}  200 {"deleted":true|false}              (Idempotency-Key header)
//	GET    /v1/search?q=&brand=&offset=&limit=  200 {"results":[{"sku","title","brand","available"}]}

var catalogFields = []string{"title", "brand", "attributes"}

type recordBody struct {
	SKU        string            `json:"sku"`
	Title      string            `json:"title"`
	Brand      string            `json:"brand"`
	Attributes map[string]string `json:"attributes"`
}

func newRecordBody(r *catalog.Record) recordBody {
	b := recordBody{SKU: r.SKU, Title: r.Title, Brand: r.Brand, Attributes: map[string]string{}}
	for _, a := range r.Attributes {
		b.Attributes[a.Name] = a.Value
	}
	return b
}

type searchResultBody struct {
	SKU       string `json:"sku"`
	Title     string `json:"title"`
	Brand     string `json:"brand"`
	Available int64  `json:"available"`
}

// decodeCatalogBody decodes a PUT body into a record of sku.
//
// encoding/json turns bytes that are not UTF-8 into U+FFFD and keeps the
// last of two members with one name, without a word: decoded that way,
// the record stored would not be the one sent, where CATALOG.SET refuses
// the same bytes. So every string is checked for replacements (replaced),
// with the detail the record check gives over RESP, and the attributes are
// read member by member, a repeated name kept for the record check to
// refuse ("attribute x is given twice").
func decodeCatalogBody(sku string, body []byte) (catalog.Record, string) {
	m, d := decodeBody(body, catalogFields)
	if d != "" {
		return catalog.Record{}, d
	}
	r := catalog.Record{SKU: sku}
	if r.Title, d = stringField(m, "title"); d != "" {
		return r, d
	}
	if r.Brand, d = stringField(m, "brand"); d != "" {
		return r, d
	}
	if r.Attributes, d = decodeAttributes(m["attributes"]); d != "" {
		return r, d
	}
	slices.SortStableFunc(r.Attributes, func(a, b catalog.Attribute) int { return strings.Compare(a.Name, b.Name) })
	return r, ""
}

// decodeAttributes decodes a JSON object of strings into attributes in
// the body's order, repeated names included; it returns what was wrong
// instead.
func decodeAttributes(raw json.RawMessage) ([]catalog.Attribute, string) {
	const notObject = "attributes must be an object of strings"
	if len(raw) == 0 || raw[0] != '{' {
		return nil, notObject
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, notObject
	}
	var attrs []catalog.Attribute
	for dec.More() {
		// The name's raw bytes lie between the offsets around its token
		// (with a comma and spaces before it, which are ASCII).
		from := dec.InputOffset()
		tok, err := dec.Token()
		name, ok := tok.(string)
		if err != nil || !ok {
			return nil, notObject
		}
		if replaced(raw[from:dec.InputOffset()], name) {
			return nil, "attribute name is not valid UTF-8"
		}
		var v json.RawMessage
		var value string
		if dec.Decode(&v) != nil || len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &value) != nil {
			return nil, notObject
		}
		if replaced(v, value) {
			return nil, "attribute " + name + " value is not valid UTF-8"
		}
		if len(attrs) == catalog.AttributesMax {
			// Bounded before the record check counts them.
			return nil, "has more than 32 attributes"
		}
		attrs = append(attrs, catalog.Attribute{Name: name, Value: value})
	}
	if _, err := dec.Token(); err != nil {
		return nil, notObject
	}
	return attrs, ""
}

// httpCatalogItem serves /v1/catalog/{sku}. The SKU is one path segment,
// percent-decoded, as a hold id is: a SKU with a '/' is sent as %2F. A
// path with more segments names no endpoint and gets the router's 404;
// taking the rest of the path whole made PUT /v1/catalog/s1/ write a
// record for SKU "s1/".
func (s *Server) httpCatalogItem(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/v1/catalog/")
	if strings.Contains(rest, "/") {
		writeJSON(w, http.StatusNotFound, errorBody{Error: "not_found", Detail: "no endpoint " + r.URL.Path})
		return
	}
	sku, err := url.PathUnescape(rest)
	if err != nil {
		s.badRequest(w, "sku in the path is malformed: "+err.Error())
		return
	}
	var op inventory.Op
	var detail string
	switch r.Method {
	case http.MethodGet, http.MethodHead: // HEAD: the router's GET
		op = inventory.CatalogGet(sku)
	case http.MethodDelete:
		op = inventory.CatalogDel(sku)
		detail = idempotencyKey(r, &op)
	case http.MethodPut:
		body, d := s.readBody(w, r)
		var rec catalog.Record
		if d == "" {
			rec, d = decodeCatalogBody(sku, body)
		}
		op = inventory.CatalogSet(rec)
		if detail = d; detail == "" {
			detail = idempotencyKey(r, &op)
		}
	}
	if detail == "" {
		detail = op.Check()
	}
	if detail == "" && op.Kind == inventory.KindCatalogSet {
		// Reserved for RESP's sake, refused here alike (CATALOG.SET).
		detail = op.Record.CheckReservedNames()
	}
	if detail != "" {
		s.refuseInvalid(w, op.Kind, detail)
		return
	}
	s.doOp(w, start, op, func(res inventory.Result) {
		switch op.Kind {
		case inventory.KindCatalogGet:
			writeJSON(w, http.StatusOK, newRecordBody(res.Record))
		case inventory.KindCatalogDel:
			writeJSON(w, http.StatusOK, map[string]bool{"deleted": res.Count == 1})
		default:
			writeJSON(w, http.StatusOK, newRecordBody(op.Record))
		}
	})
}

func (s *Server) httpSearch(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// Read strictly, as every GET endpoint reads its query string: a
	// misspelt parameter must not pass for a search with defaults.
	qs, detail := s.query(r, "q", "brand", "offset", "limit")
	if detail != "" {
		s.refuseInvalid(w, inventory.KindSearch, detail)
		return
	}
	// A parameter present but empty is refused as RESP refuses the empty
	// argument, not read as absent.
	q := catalog.Query{Prefix: qs["q"], Brand: qs["brand"]}
	if hasKey(qs, "brand") && q.Brand == "" {
		detail = "brand prefix is empty"
	}
	for _, p := range []struct {
		name string
		dst  *int
		msg  string
	}{{"offset", &q.Offset, "offset must be from 0 to 100000"}, {"limit", &q.Limit, "limit must be from 1 to 1000"}} {
		if v, ok := qs[p.name]; ok && detail == "" {
			// Digits as RESP's OFFSET and LIMIT take them (no sign).
			n, ok := resp.ParseInt([]byte(v))
			if !ok || n < 0 || n > math.MaxInt32 {
				detail = p.msg
				break
			}
			*p.dst = int(n)
			if p.name == "limit" && n == 0 {
				detail = p.msg
			}
		}
	}
	op := inventory.Search(q)
	if detail == "" {
		detail = op.Check()
	}
	if detail != "" {
		s.refuseInvalid(w, op.Kind, detail)
		return
	}
	s.doOp(w, start, op, func(res inventory.Result) {
		out := struct {
			Results []searchResultBody `json:"results"`
		}{Results: make([]searchResultBody, len(res.Hits))}
		for i, h := range res.Hits {
			out.Results[i] = searchResultBody(h)
		}
		writeJSON(w, http.StatusOK, out)
	})
}

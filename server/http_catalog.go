package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"allot/catalog"
	"allot/inventory"
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
	var attrs map[string]string
	if raw := m["attributes"]; len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &attrs) != nil {
		return r, "attributes must be an object of strings"
	}
	for name, v := range attrs {
		r.Attributes = append(r.Attributes, catalog.Attribute{Name: name, Value: v})
	}
	slices.SortFunc(r.Attributes, func(a, b catalog.Attribute) int { return strings.Compare(a.Name, b.Name) })
	return r, ""
}

func (s *Server) httpCatalogItem(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sku := strings.TrimPrefix(r.URL.Path, "/v1/catalog/")
	var op inventory.Op
	var detail string
	switch r.Method {
	case http.MethodGet:
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
	qs := r.URL.Query()
	q := catalog.Query{Prefix: qs.Get("q"), Brand: qs.Get("brand")}
	detail := ""
	for _, p := range []struct {
		name string
		dst  *int
		msg  string
	}{{"offset", &q.Offset, "offset must be from 0 to 100000"}, {"limit", &q.Limit, "limit must be from 1 to 1000"}} {
		if v := qs.Get(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				detail = p.msg
				break
			}
			*p.dst = n
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

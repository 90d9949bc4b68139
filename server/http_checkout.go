package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"allot/inventory"
)

// The checkout endpoints of contract v2 (DESIGN.md "Checkout: holds,
// orders, idempotency"):
//
//	POST /v1/holds                  {"hold","ttl_ms","lines":[{"sku","condition","source","quantity"}]}
//	POST /v1/holds/{hold}/confirm
//	POST /v1/holds/{hold}/cancel
//	GET  /v1/holds/{hold}
//	POST /v1/orders                 {"lines":[...]}   (Idempotency-Key header)

// IdempotencyKeyHeader carries the idempotency key of a POST or PUT.
const IdempotencyKeyHeader = "Idempotency-Key"

type (
	allocationBody struct {
		SKU       string `json:"sku"`
		Warehouse string `json:"warehouse"`
		Condition string `json:"condition"`
		Source    string `json:"source"`
		Quantity  int64  `json:"quantity"`
	}
	holdBody struct {
		Hold        string           `json:"hold"`
		State       string           `json:"state"`
		ExpiresAtMS int64            `json:"expires_at_ms"`
		Lines       []allocationBody `json:"lines"`
	}
	orderBody struct {
		Lines []allocationBody `json:"lines"`
	}
	stateBody struct {
		State string `json:"state"`
	}
	insufficientLineBody struct {
		Error     string `json:"error"`
		SKU       string `json:"sku"`
		Condition string `json:"condition"`
		Source    string `json:"source"`
		Available int64  `json:"available"`
	}
	// outcomeBody is a 503: whether the request was applied.
	outcomeBody struct {
		Error   string `json:"error"`
		Applied any    `json:"applied"` // false, or "unknown"
		Detail  string `json:"detail,omitempty"`
	}
)

var (
	holdFields  = []string{"hold", "ttl_ms", "lines"}
	orderFields = []string{"lines"}
	lineFields  = []string{"sku", "condition", "source", "quantity"}
)

func allocationBodies(as []inventory.Allocation) []allocationBody {
	out := make([]allocationBody, len(as))
	for i, a := range as {
		out[i] = allocationBody{SKU: a.Row.SKU, Warehouse: a.Row.Warehouse, Condition: a.Row.Condition, Source: a.Row.Source, Quantity: a.Count}
	}
	return out
}

// decodeLinesField decodes the "lines" array of a hold or an order.
func decodeLinesField(raw json.RawMessage) ([]inventory.Demand, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, "lines must be an array of {" + fieldList(lineFields) + "}"
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, "lines must be an array of objects: " + jsonError(err)
	}
	if len(items) == 0 || len(items) > inventory.HoldLinesMax {
		return nil, "a hold or an order takes 1 to 64 lines"
	}
	lines := make([]inventory.Demand, len(items))
	for i, item := range items {
		prefix := "line " + strconv.Itoa(i+1) + ": "
		m, d := decodeBody(item, lineFields)
		if d != "" {
			return nil, prefix + d
		}
		l := &lines[i]
		for _, f := range lineFields {
			switch f {
			case "sku":
				l.Group.SKU, d = stringField(m, f)
			case "condition":
				l.Group.Condition, d = stringField(m, f)
			case "source":
				l.Group.Source, d = stringField(m, f)
			case "quantity":
				l.N, d = intField(m, f, inventory.CheckQuantity(0))
			}
			if d != "" {
				return nil, prefix + d
			}
		}
	}
	return lines, ""
}

// decodeCheckoutBody decodes the body of a hold (kind KindHold) or an order
// (KindOrder) into op.
func decodeCheckoutBody(kind inventory.Kind, body []byte, op *inventory.Op) string {
	fields := orderFields
	if kind == inventory.KindHold {
		fields = holdFields
	}
	m, d := decodeBody(body, fields)
	if d != "" {
		return d
	}
	*op = inventory.Op{Kind: kind}
	if kind == inventory.KindHold {
		if op.Hold, d = stringField(m, "hold"); d != "" {
			return d
		}
		if op.TTL, d = intField(m, "ttl_ms", "ttl_ms must be an integer from 1 to 604800000"); d != "" {
			return d
		}
	}
	if op.Lines, d = decodeLinesField(m["lines"]); d != "" {
		return d
	}
	return op.Check()
}

// idempotencyKey reads the Idempotency-Key header into op; "" or what was
// wrong.
func idempotencyKey(r *http.Request, op *inventory.Op) string {
	vs := r.Header.Values(IdempotencyKeyHeader)
	switch {
	case len(vs) == 0:
		return ""
	case len(vs) > 1:
		return IdempotencyKeyHeader + " is given " + strconv.Itoa(len(vs)) + " times"
	case !op.Kind.Keyed():
		return op.Kind.String() + " takes no " + IdempotencyKeyHeader + " (a hold id is its own key)"
	}
	if d := inventory.CheckID(vs[0]); d != "" {
		return IdempotencyKeyHeader + " " + d
	}
	op.IdempotencyKey = vs[0]
	return ""
}

func (s *Server) httpHoldCreate(w http.ResponseWriter, r *http.Request) {
	s.httpLinesOp(w, r, inventory.KindHold)
}

func (s *Server) httpOrder(w http.ResponseWriter, r *http.Request) {
	s.httpLinesOp(w, r, inventory.KindOrder)
}

func (s *Server) httpLinesOp(w http.ResponseWriter, r *http.Request, kind inventory.Kind) {
	start := time.Now()
	var op inventory.Op
	body, detail := s.readBody(w, r)
	if detail == "" {
		detail = decodeCheckoutBody(kind, body, &op)
	}
	if detail == "" {
		detail = idempotencyKey(r, &op)
	}
	if detail != "" {
		s.refuseInvalid(w, kind, detail)
		return
	}
	s.doOp(w, start, op, func(res inventory.Result) {
		if kind == inventory.KindHold {
			writeJSON(w, http.StatusCreated, holdBody{Hold: op.Hold, State: inventory.HoldHeld.String(), ExpiresAtMS: res.ExpiresAt, Lines: allocationBodies(res.Allocations)})
			return
		}
		writeJSON(w, http.StatusOK, orderBody{Lines: allocationBodies(res.Allocations)})
	})
}

// httpHoldItem serves /v1/holds/{hold} (GET) and /v1/holds/{hold}/confirm
// and /cancel (POST). The hold id is one path segment, percent-decoded: an
// id may hold any character but a control one, '/' included.
func (s *Server) httpHoldItem(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/v1/holds/")
	parts := strings.Split(rest, "/")
	id, err := url.PathUnescape(parts[0])
	if err != nil {
		s.badRequest(w, "hold id in the path is malformed: "+err.Error())
		return
	}
	var op inventory.Op
	switch {
	case len(parts) == 1 && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		op = inventory.HoldGet(id)
	case len(parts) == 2 && parts[1] == "confirm" && r.Method == http.MethodPost:
		op = inventory.Confirm(id)
	case len(parts) == 2 && parts[1] == "cancel" && r.Method == http.MethodPost:
		op = inventory.Cancel(id)
	case len(parts) == 1 || (len(parts) == 2 && (parts[1] == "confirm" || parts[1] == "cancel")):
		w.Header().Set("Allow", "GET (a hold), POST (/confirm, /cancel)")
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: "method_not_allowed", Detail: r.Method + " " + r.URL.Path + ": GET /v1/holds/{hold}, POST /v1/holds/{hold}/confirm or /cancel"})
		return
	default:
		writeJSON(w, http.StatusNotFound, errorBody{Error: "not_found", Detail: "no endpoint " + r.URL.Path})
		return
	}
	if d := op.Check(); d != "" {
		s.refuseInvalid(w, op.Kind, d)
		return
	}
	if len(r.Header.Values(IdempotencyKeyHeader)) > 0 {
		s.refuseInvalid(w, op.Kind, op.Kind.String()+" takes no "+IdempotencyKeyHeader+": it is idempotent by its hold id")
		return
	}
	s.doOp(w, start, op, func(res inventory.Result) {
		switch op.Kind {
		case inventory.KindHoldGet:
			writeJSON(w, http.StatusOK, holdBody{Hold: id, State: res.State.String(), ExpiresAtMS: res.ExpiresAt, Lines: allocationBodies(res.Allocations)})
		case inventory.KindConfirm:
			writeJSON(w, http.StatusOK, stateBody{State: inventory.HoldConfirmed.String()})
		default:
			writeJSON(w, http.StatusOK, stateBody{State: inventory.HoldCancelled.String()})
		}
	})
}

// refuseInvalid answers 400 for a request that never reached the engine.
func (s *Server) refuseInvalid(w http.ResponseWriter, kind inventory.Kind, detail string) {
	var t opTally
	t.add(kind, resultOf(inventory.CodeInvalid))
	s.metrics.flush(protocolHTTP, &t, 0)
	s.badRequest(w, detail)
}

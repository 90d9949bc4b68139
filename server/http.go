package server

import (
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"allot/engine"
	"allot/internal/bearer"
	"allot/internal/loopback"
	"allot/inventory"
)

// openAPI is the OpenAPI 3 document of the HTTP API. docs/openapi.json is
// the same file, checked in for readers; a test keeps the two identical.
//
//go:embed openapi.json
var openAPI []byte

// route is one endpoint: its path, the methods it serves, whether it needs
// the bearer token, and its handler.
type route struct {
	path    string
	methods map[string]func(w http.ResponseWriter, r *http.Request)
	open    bool // served without the bearer token
}

func (s *Server) routes() []route {
	return []route{
		{path: "/v1/capture", methods: map[string]func(http.ResponseWriter, *http.Request){"POST": s.httpCapture}},
		{path: "/v1/release", methods: map[string]func(http.ResponseWriter, *http.Request){"POST": s.httpRelease}},
		{path: "/v1/stock", methods: map[string]func(http.ResponseWriter, *http.Request){"PUT": s.httpStockSet, "GET": s.httpStockGet}},
		{path: "/v1/available", methods: map[string]func(http.ResponseWriter, *http.Request){"GET": s.httpAvailable}},
		{path: "/v1/changes", methods: map[string]func(http.ResponseWriter, *http.Request){"GET": s.httpChanges}},
		{path: "/v1/holds", methods: map[string]func(http.ResponseWriter, *http.Request){"POST": s.httpHoldCreate}},
		{path: "/v1/holds/", methods: map[string]func(http.ResponseWriter, *http.Request){"GET": s.httpHoldItem, "POST": s.httpHoldItem}},
		{path: "/v1/orders", methods: map[string]func(http.ResponseWriter, *http.Request){"POST": s.httpOrder}},
		{path: "/v1/catalog/", methods: map[string]func(http.ResponseWriter, *http.Request){"GET": s.httpCatalogItem, "PUT": s.httpCatalogItem, "DELETE": s.httpCatalogItem}},
		{path: "/v1/search", methods: map[string]func(http.ResponseWriter, *http.Request){"GET": s.httpSearch}},
		{path: "/metrics", methods: map[string]func(http.ResponseWriter, *http.Request){"GET": s.httpMetrics}},
		{path: "/healthz", methods: map[string]func(http.ResponseWriter, *http.Request){"GET": s.httpHealth}, open: true},
		{path: "/openapi.json", methods: map[string]func(http.ResponseWriter, *http.Request){"GET": s.httpOpenAPI}, open: true},
	}
}

// httpHandler routes by exact path, then method, so that every refusal
// (unknown path, wrong method, missing token) is a JSON body like the rest
// of the API rather than net/http's plain-text defaults.
func (s *Server) httpHandler() http.Handler {
	byPath := map[string]route{}
	for _, rt := range s.routes() {
		byPath[rt.path] = rt
	}
	routed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt, ok := byPath[r.URL.Path]
		if !ok && strings.HasPrefix(r.URL.Path, "/v1/holds/") {
			rt, ok = byPath["/v1/holds/"]
		}
		if !ok && strings.HasPrefix(r.URL.Path, "/v1/catalog/") {
			rt, ok = byPath["/v1/catalog/"]
		}
		if !ok {
			writeJSON(w, http.StatusNotFound, errorBody{Error: "not_found", Detail: "no endpoint " + r.URL.Path})
			return
		}
		h, ok := rt.methods[r.Method]
		if !ok && r.Method == http.MethodHead {
			h, ok = rt.methods[http.MethodGet]
		}
		if !ok {
			allowed := make([]string, 0, len(rt.methods))
			for m := range rt.methods {
				allowed = append(allowed, m)
			}
			slices.Sort(allowed)
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: "method_not_allowed", Detail: r.Method + " " + r.URL.Path + ": allowed " + strings.Join(allowed, ", ")})
			return
		}
		if !rt.open && !s.bearerOK(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="allot"`)
			writeJSON(w, http.StatusUnauthorized, errorBody{Error: "unauthorized", Detail: "missing or wrong bearer token"})
			return
		}
		h(w, r)
	})
	// A server without a password trusts whoever can connect, and a
	// browser on this machine can. Requests the browser marks as another
	// site's (Sec-Fetch-Site, Origin: a page POSTing a text/plain body
	// needs no CORS preflight) are refused; curl and other clients send no
	// such mark. A page whose owner rebinds its name to 127.0.0.1 (DNS
	// rebinding) makes same-origin requests, but under its own name: a
	// password-less server answers only requests addressed to a loopback
	// name.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusForbidden, errorBody{Error: "forbidden", Detail: "a request from another site's page is refused"})
	}))
	guarded := cop.Handler(routed)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.metrics.httpRequests.Add(1)
		if s.cfg.Password == "" && !loopback.Host(r.Host) {
			writeJSON(w, http.StatusForbidden, errorBody{Error: "forbidden", Detail: "Host " + r.Host + " is not a loopback name: a server without a password answers only requests addressed to localhost or a loopback address"})
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// bearerOK checks "Authorization: Bearer <password>" (the scheme in any
// case, bearer.Token); the token is compared exactly, in constant time.
func (s *Server) bearerOK(r *http.Request) bool {
	if s.cfg.Password == "" {
		return true
	}
	token, ok := bearer.Token(r.Header.Get("Authorization"))
	return ok && subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.Password)) == 1
}

// Response bodies, as in the wire contract.
type (
	errorBody struct {
		Error     string `json:"error"`
		Detail    string `json:"detail,omitempty"`
		Available *int64 `json:"available,omitempty"`
	}
	lineBody struct {
		Warehouse string `json:"warehouse"`
		Quantity  int64  `json:"quantity"`
	}
	captureBody struct {
		Lines []lineBody `json:"lines"`
	}
	countBody struct {
		Count int64 `json:"count"`
	}
	stockBody struct {
		Count int64 `json:"count"`
		Price int64 `json:"price"`
	}
	rowBody struct {
		Warehouse string `json:"warehouse"`
		Condition string `json:"condition"`
		Source    string `json:"source"`
		Count     int64  `json:"count"`
		Price     int64  `json:"price"`
	}
	rowsBody struct {
		Rows []rowBody `json:"rows"`
	}
	availableBody struct {
		Available int64 `json:"available"`
	}
	healthBody struct {
		Status     string `json:"status"`
		Version    string `json:"version"`
		Durability string `json:"durability"`
	}
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own types are encoded here: a failure is a bug.
		panic("server: encode response: " + err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func (s *Server) badRequest(w http.ResponseWriter, detail string) {
	s.metrics.httpBadRequests.Add(1)
	writeJSON(w, http.StatusBadRequest, errorBody{Error: "invalid", Detail: detail})
}

// readBody reads the request body up to RequestBytesMax.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.cfg.RequestBytesMax)))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, "body is larger than " + strconv.Itoa(s.cfg.RequestBytesMax) + " bytes (request bytes max)"
		}
		return nil, "reading the body: " + err.Error()
	}
	return body, ""
}

// doOp runs one op through the engine and writes the contract's answer for
// every outcome but CodeOK, which it leaves to ok.
func (s *Server) doOp(w http.ResponseWriter, start time.Time, op inventory.Op, ok func(inventory.Result)) {
	var t opTally
	defer func() { s.metrics.flush(protocolHTTP, &t, time.Since(start)) }()
	res, err := s.engine.Do(op, nil)
	if err != nil {
		t.add(op.Kind, resultError)
		writeEngineError(w, err)
		return
	}
	t.add(op.Kind, resultOf(res.Code))
	switch res.Code {
	case inventory.CodeOK:
		ok(res)
	case inventory.CodeInsufficient:
		if (op.Kind == inventory.KindHold || op.Kind == inventory.KindOrder) && res.ShortLine < len(op.Lines) {
			g := op.Lines[res.ShortLine].Group
			writeJSON(w, http.StatusConflict, insufficientLineBody{Error: "insufficient", SKU: g.SKU, Condition: g.Condition, Source: g.Source, Available: res.Available})
			return
		}
		writeJSON(w, http.StatusConflict, errorBody{Error: "insufficient", Available: &res.Available})
	case inventory.CodeNotFound:
		writeJSON(w, http.StatusNotFound, errorBody{Error: "not_found"})
	case inventory.CodeMismatch:
		writeJSON(w, http.StatusConflict, errorBody{Error: "mismatch", Detail: res.Detail})
	case inventory.CodeExpired, inventory.CodeCancelled, inventory.CodeConfirmed:
		writeJSON(w, http.StatusConflict, errorBody{Error: res.Code.String()})
	default:
		s.metrics.httpBadRequests.Add(1)
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "invalid", Detail: res.Detail})
	}
}

// writeEngineError answers an engine error with its outcome class
// (DESIGN.md "Outcome classes"): 503 with whether the request was applied.
// The engine classes a read, and an op that changed nothing, in a batch
// whose journal failed as refused (applied false), not unknown.
func writeEngineError(w http.ResponseWriter, err error) {
	if errors.Is(err, engine.ErrOutcomeUnknown) {
		writeJSON(w, http.StatusServiceUnavailable, outcomeBody{Error: "unknown_outcome", Applied: "unknown", Detail: err.Error()})
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, outcomeBody{Error: "unavailable", Applied: false, Detail: unavailableDetail(err)})
}

// bodyOp reads and decodes the body of an op request; it answers 400 itself
// and reports false on bad input.
func (s *Server) bodyOp(w http.ResponseWriter, r *http.Request, kind inventory.Kind, op *inventory.Op) bool {
	body, detail := s.readBody(w, r)
	if detail == "" {
		detail = decodeOpBody(kind, body, op)
	}
	if detail == "" {
		detail = idempotencyKey(r, op)
	}
	if detail != "" {
		var t opTally
		t.add(kind, resultOf(inventory.CodeInvalid))
		s.metrics.flush(protocolHTTP, &t, 0)
		s.badRequest(w, detail)
		return false
	}
	return true
}

func (s *Server) httpCapture(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var op inventory.Op
	if !s.bodyOp(w, r, inventory.KindCapture, &op) {
		return
	}
	s.doOp(w, start, op, func(res inventory.Result) {
		out := captureBody{Lines: make([]lineBody, len(res.Lines))}
		for i, l := range res.Lines {
			out.Lines[i] = lineBody{Warehouse: l.Warehouse, Quantity: l.Count}
		}
		writeJSON(w, http.StatusOK, out)
	})
}

func (s *Server) httpRelease(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var op inventory.Op
	if !s.bodyOp(w, r, inventory.KindRelease, &op) {
		return
	}
	s.doOp(w, start, op, func(res inventory.Result) {
		writeJSON(w, http.StatusOK, countBody{Count: res.Count})
	})
}

func (s *Server) httpStockSet(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var op inventory.Op
	if !s.bodyOp(w, r, inventory.KindStock, &op) {
		return
	}
	s.doOp(w, start, op, func(res inventory.Result) {
		writeJSON(w, http.StatusOK, stockBody{Count: res.Count, Price: res.Price})
	})
}

// queryParams checks that q holds only names from allowed, each at most
// once, and returns them.
func queryParams(q url.Values, allowed ...string) (map[string]string, string) {
	out := map[string]string{}
	for k, vs := range q {
		known := false
		for _, a := range allowed {
			if k == a {
				known = true
			}
		}
		if !known {
			return nil, "unknown query parameter " + strconv.Quote(k) + ": want " + strings.Join(allowed, ", ")
		}
		if len(vs) != 1 {
			return nil, "query parameter " + strconv.Quote(k) + " is given " + strconv.Itoa(len(vs)) + " times"
		}
		out[k] = vs[0]
	}
	return out, ""
}

func (s *Server) httpStockGet(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	q, detail := s.query(r, "sku", "warehouse", "condition", "source")
	if detail != "" {
		s.badRequest(w, detail)
		return
	}
	if len(q) == 1 && hasKey(q, "sku") {
		s.httpRowsOfSKU(w, q["sku"])
		return
	}
	if len(q) != 4 {
		s.badRequest(w, "give sku alone (every row of a SKU) or sku, warehouse, condition and source (one row)")
		return
	}
	op := inventory.Get(inventory.RowKey{SKU: q["sku"], Warehouse: q["warehouse"], Condition: q["condition"], Source: q["source"]})
	if d := op.Check(); d != "" {
		s.badRequest(w, d)
		return
	}
	s.doOp(w, start, op, func(res inventory.Result) {
		writeJSON(w, http.StatusOK, stockBody{Count: res.Count, Price: res.Price})
	})
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// query parses the query string strictly: a malformed one is bad input, not
// an empty one.
func (s *Server) query(r *http.Request, allowed ...string) (map[string]string, string) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, "query string is malformed: " + err.Error()
	}
	return queryParams(q, allowed...)
}

func (s *Server) httpRowsOfSKU(w http.ResponseWriter, sku string) {
	if d := inventory.CheckID(sku); d != "" {
		s.badRequest(w, "sku "+d)
		return
	}
	rows, err := s.engine.RowsOfSKU(sku)
	if err != nil {
		writeEngineError(w, err)
		return
	}
	out := rowsBody{Rows: make([]rowBody, len(rows))}
	for i, row := range rows {
		out.Rows[i] = rowBody{Warehouse: row.Key.Warehouse, Condition: row.Key.Condition, Source: row.Key.Source, Count: row.Count, Price: row.Price}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) httpAvailable(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	q, detail := s.query(r, "sku", "condition", "source")
	if detail != "" {
		s.badRequest(w, detail)
		return
	}
	for _, k := range []string{"sku", "condition", "source"} {
		if !hasKey(q, k) {
			s.badRequest(w, k+" is missing")
			return
		}
	}
	op := inventory.Available(inventory.GroupKey{SKU: q["sku"], Condition: q["condition"], Source: q["source"]})
	if d := op.Check(); d != "" {
		s.badRequest(w, d)
		return
	}
	s.doOp(w, start, op, func(res inventory.Result) {
		writeJSON(w, http.StatusOK, availableBody{Available: res.Count})
	})
}

func (s *Server) httpMetrics(w http.ResponseWriter, r *http.Request) {
	s.metrics.init(s.engine)
	s.metrics.handler.ServeHTTP(w, r)
}

func (s *Server) httpHealth(w http.ResponseWriter, r *http.Request) {
	if s.engine.Stats().Failed {
		writeJSON(w, http.StatusServiceUnavailable, healthBody{Status: "failed", Version: s.cfg.Version, Durability: string(s.engine.Durability())})
		return
	}
	writeJSON(w, http.StatusOK, healthBody{Status: "ok", Version: s.cfg.Version, Durability: string(s.engine.Durability())})
}

func (s *Server) httpOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPI)
}

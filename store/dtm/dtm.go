// Package dtm is the bench's "dtm" store: an order (store.Orderer) run as
// a saga by the real dtm transaction manager, the way its published
// saga-on-Redis benchmark ran it. The bench process is both the saga's
// client and its branch service: each distinct group of an order is one
// saga step whose action captures the group's summed demand on Redis (a
// Lua script over the redis store's rows) and whose compensation releases
// what that action took (another script). A short group makes its action
// answer FAILURE, and dtm then compensates the steps that ran: the
// checker proves the order left nothing behind.
//
// dtm's sub-transaction barrier (a repeated action or compensation does
// nothing more; a compensation that comes before its action makes the
// action a no-op) is done inside the two scripts, keyed by the order's
// idempotency key (the saga's gid) and the step, as dtm's Redis barrier
// does it.
//
// The saga client speaks dtm's HTTP API directly (POST submit with
// wait_result, GET query), the requests its Go SDK dtmcli sends: the SDK's
// own module, github.com/dtm-labs/client, is refused by the module proxy
// here, and dtm's copy of it (github.com/dtm-labs/dtm/client/dtmcli)
// would bring about 140 modules into go.mod for a few JSON requests.
//
// Rows, Load and Describe are the redis store's: the order's stock is the
// same Redis rows the redis store captures from. Sessions implement only
// Order: capture and release of the ims workload are refused.
package dtm

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"allot/inventory"
	"allot/store"
	"allot/store/redis"
)

// Defaults of the server this store talks to (services starts dtm there).
const (
	// URLDefault is dtm's HTTP API.
	URLDefault = store.DTMURL
	// retentionMS is how long branch records and order carts are kept.
	retentionMS = 24 * 60 * 60 * 1000
	// resultWait bounds how long an order waits for its saga to finish
	// once dtm answered (it answers after the saga's branches ran).
	resultWait = 30 * time.Second
)

var (
	//go:embed action.lua
	actionLua string
	//go:embed compensate.lua
	compensateLua string

	actionScript     = goredis.NewScript(actionLua)
	compensateScript = goredis.NewScript(compensateLua)
)

// Key layout of the branch records, under the redis store's prefix so that
// Load clears them with the rows.
const (
	keyCart   = redis.KeyPrefix + "dtm:cart:"
	keyAction = redis.KeyPrefix + "dtm:act:"
	keyComp   = redis.KeyPrefix + "dtm:comp:"
)

func init() {
	store.Register(store.Registration{
		Name:   "dtm",
		About:  "dtm " + "v1.17.3" + " sagas on Redis: one step per group, action = a capture script, compensation = a release script (order workload only)",
		Server: store.ServerDTM,
		Open:   Open,
		// Its sessions make orders only (see OrdersOnly).
		Workloads: []string{"order"},
	})
}

// Store is the rows on Redis, a client of dtm, and the branch service.
type Store struct {
	rows   store.Store // the redis store
	client *goredis.Client
	dtmURL string
	http   *http.Client
	ln     net.Listener
	srv    *http.Server
	// branchURL is the branch service's base URL, as dtm calls it: the
	// listener's address and the run's nonce (see ownRun).
	branchURL string
	empty     atomic.Bool
	// nonce tells this Store's sagas (their gids, their branch URLs)
	// from those of every other run.
	nonce string
	seq   atomic.Int64
}

// Open connects to dtm at cfg.Addr (host:port; default URLDefault's) and
// to the redis store's server, and starts the branch service on a loopback
// port of its own.
func Open(ctx context.Context, cfg store.Config) (store.Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dtmURL := URLDefault
	if cfg.Addr != "" {
		dtmURL = "http://" + cfg.Addr + "/api/dtmsvr"
	}
	rcfg := cfg
	rcfg.Addr = ""
	rows, err := redis.Open(ctx, rcfg)
	if err != nil {
		return nil, fmt.Errorf("dtm: its rows' Redis: %w", err)
	}
	s := &Store{
		rows:   rows,
		client: goredis.NewClient(&goredis.Options{Addr: redis.AddrDefault, PoolSize: 2*cfg.Workers + 8, DialTimeout: cfg.Timeout, ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout, PoolTimeout: cfg.Timeout}),
		dtmURL: dtmURL,
		http: &http.Client{Timeout: resultWait, Transport: &http.Transport{
			MaxIdleConnsPerHost: 2*cfg.Workers + 8, IdleConnTimeout: time.Minute,
		}},
		nonce: strconv.FormatInt(time.Now().UnixNano(), 36),
	}
	octx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if _, err := s.newGID(octx); err != nil {
		s.closeClients()
		return nil, fmt.Errorf("%w: dtm at %s: %v", store.ErrServerDown, dtmURL, err)
	}
	for _, sc := range []*goredis.Script{actionScript, compensateScript} {
		if err := sc.Load(octx, s.client).Err(); err != nil {
			s.closeClients()
			return nil, fmt.Errorf("dtm: loading a branch script: %w", err)
		}
	}
	if s.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		s.closeClients()
		return nil, fmt.Errorf("dtm: the branch service: %w", err)
	}
	s.branchURL = "http://" + s.ln.Addr().String() + "/" + s.nonce
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{run}/action", s.ownRun(s.handleAction))
	mux.HandleFunc("POST /{run}/compensate", s.ownRun(s.handleCompensate))
	mux.HandleFunc("/", refuseStale)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(s.ln)
	return s, nil
}

func (s *Store) closeClients() {
	s.client.Close()
	s.rows.Close()
	s.http.CloseIdleConnections()
}

// SetEmptyBranches makes every branch answer success and do nothing.
func (s *Store) SetEmptyBranches(empty bool) { s.empty.Store(empty) }

// Load loads the rows into Redis (removing the branch records too).
func (s *Store) Load(ctx context.Context, rows []inventory.Row) error { return s.rows.Load(ctx, rows) }

// Rows reads the rows back from Redis.
func (s *Store) Rows(ctx context.Context) ([]inventory.Row, error) { return s.rows.Rows(ctx) }

// Describe names dtm and the Redis the rows are on.
func (s *Store) Describe(ctx context.Context) (string, error) {
	line := "dtm v1.17.3 sagas (" + s.dtmURL + "), branches in the bench process"
	if d, ok := s.rows.(store.Describer); ok {
		r, err := d.Describe(ctx)
		if err != nil {
			return "", err
		}
		line += "; rows and dtm's storage on " + r
	}
	if s.empty.Load() {
		line += "; branches empty"
	}
	return line, nil
}

// Close stops the branch service and closes the clients.
func (s *Store) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	s.closeClients()
	return err
}

// Session returns a worker's handle; all sessions share the store's
// clients, which are safe for concurrent use.
func (s *Store) Session(context.Context) (store.Session, error) { return &session{s: s}, nil }

type session struct{ s *Store }

var errOrdersOnly = errors.New("dtm: this store runs the order workload only (capture and release are not sagas here)")

// OrdersOnly keeps the reservation workload off this store (see
// store.OrdersOnly): each of its ops would fail.
func (*Store) OrdersOnly() string { return errOrdersOnly.Error() }

func (*session) Capture(context.Context, inventory.GroupKey, int64, []inventory.Line) (inventory.Result, error) {
	return inventory.Result{}, errOrdersOnly
}

func (*session) Release(context.Context, inventory.RowKey, int64) (inventory.Result, error) {
	return inventory.Result{}, errOrdersOnly
}

func (*session) Close() error { return nil }

// stepPayload is what dtm hands back to a branch: one group's demand.
type stepPayload struct {
	Key       string `json:"key"`
	Step      int    `json:"step"`
	SKU       string `json:"sku"`
	Condition string `json:"condition"`
	Source    string `json:"source"`
	N         int64  `json:"n"`
	First     int    `json:"first"`
}

func (p *stepPayload) keys() (action, comp string) {
	suffix := p.Key + "\x1f" + strconv.Itoa(p.Step)
	return keyAction + suffix, keyComp + suffix
}

// Order submits the order as a saga with wait_result and answers from the
// branches' records. The key is the saga's gid (dtm refuses a second saga
// with one gid, so a repeat applies nothing); an order without a key gets
// a fresh gid.
func (se *session) Order(ctx context.Context, key string, lines []store.CartLine, res *store.HoldResult) error {
	s := se.s
	if d := store.CheckOrder(key, lines); d != "" {
		res.Reset()
		res.Code, res.Detail = store.CheckoutInvalid, d
		return nil
	}
	if key == "" {
		key = "allot-" + s.nonce + "-" + strconv.FormatInt(s.seq.Add(1), 10)
	}
	cart := store.EncodeCart(lines)
	first, err := s.client.SetNX(ctx, keyCart+key, cart, retentionMS*time.Millisecond).Result()
	if err != nil {
		return fmt.Errorf("dtm: order %s: %w", key, err)
	}
	if !first {
		stored, err := s.client.Get(ctx, keyCart+key).Result()
		if err != nil {
			return fmt.Errorf("dtm: order %s: %w", key, err)
		}
		if stored != cart {
			res.Reset()
			res.Code, res.Detail = store.CheckoutMismatch, "key "+key+" was used with other arguments"
			return nil
		}
	}
	demand := store.SumCart(lines, nil)
	steps := make([]map[string]string, len(demand))
	payloads := make([]string, len(demand))
	for i, dm := range demand {
		steps[i] = map[string]string{"action": s.branchURL + "/action", "compensate": s.branchURL + "/compensate"}
		p, _ := json.Marshal(stepPayload{Key: key, Step: i, SKU: dm.Group.SKU, Condition: dm.Group.Condition, Source: dm.Group.Source, N: dm.N, First: dm.First})
		payloads[i] = string(p)
	}
	body, _ := json.Marshal(map[string]any{
		"gid": key, "trans_type": "saga", "steps": steps, "payloads": payloads,
		"wait_result": true, "concurrent": false, "protocol": "",
	})
	// The answer to submit says success, failure (a branch failed and the
	// saga rolled back, or the gid exists from a first attempt): either
	// way the outcome is read back from dtm and the branch records.
	if _, err := s.post(ctx, "/submit", body); err != nil {
		return fmt.Errorf("dtm: order %s: submit: %w", key, err)
	}
	status, err := s.waitStatus(ctx, key)
	if err != nil {
		return fmt.Errorf("dtm: order %s: %w", key, err)
	}
	res.Reset()
	if s.empty.Load() {
		if status != "succeed" {
			return fmt.Errorf("dtm: order %s: a saga of empty branches ended %s", key, status)
		}
		return nil
	}
	recKeys := make([]string, len(demand))
	for i := range demand {
		p := stepPayload{Key: key, Step: i}
		recKeys[i], _ = p.keys()
	}
	recs, err := s.client.MGet(ctx, recKeys...).Result()
	if err != nil {
		return fmt.Errorf("dtm: order %s: reading the branch records: %w", key, err)
	}
	switch status {
	case "succeed":
		res.Code = store.CheckoutOK
		for i, r := range recs {
			rec, _ := r.(string)
			if !strings.HasPrefix(rec, "O") {
				return fmt.Errorf("dtm: order %s: the saga succeeded but step %d's record is %q", key, i, rec)
			}
			if res.Lines, err = appendLines(res.Lines, rec[1:]); err != nil {
				return fmt.Errorf("dtm: order %s: step %d: %w", key, i, err)
			}
		}
		return nil
	case "failed":
		for i, r := range recs {
			rec, _ := r.(string)
			if f, ok := strings.CutPrefix(rec, "I\x1f"); ok {
				short, avail, ok := strings.Cut(f, "\x1f")
				n1, err1 := strconv.Atoi(short)
				n2, err2 := strconv.ParseInt(avail, 10, 64)
				if !ok || err1 != nil || err2 != nil {
					return fmt.Errorf("dtm: order %s: step %d's record %q", key, i, rec)
				}
				res.Code, res.Short, res.Available = store.CheckoutInsufficient, n1, n2
				return nil
			}
		}
		return fmt.Errorf("dtm: order %s: the saga failed and no step was short", key)
	}
	return fmt.Errorf("dtm: order %s: saga status %q", key, status)
}

// appendLines parses an 'O' record's reply lines.
func appendLines(dst []store.HoldLine, rec string) ([]store.HoldLine, error) {
	for _, entry := range strings.Split(rec, "\x1d") {
		if entry == "" {
			continue
		}
		parts := strings.Split(entry, "\x1e")
		if len(parts) != 3 {
			return dst, fmt.Errorf("record entry %q", entry)
		}
		f := strings.Split(parts[2], "\x1f")
		if len(f) != 5 {
			return dst, fmt.Errorf("record line %q", parts[2])
		}
		n, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil {
			return dst, fmt.Errorf("record line %q: %w", parts[2], err)
		}
		dst = append(dst, store.HoldLine{Row: inventory.RowKey{SKU: f[0], Warehouse: f[1], Condition: f[2], Source: f[3]}, Count: n})
	}
	return dst, nil
}

// post sends body to dtm's API path and returns the answer. A business
// failure (409, or FAILURE in the text) is not an error here.
func (s *Store) post(ctx context.Context, path string, body []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.dtmURL+path, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict && !bytes.Contains(text, []byte("FAILURE")) {
		return "", fmt.Errorf("%s: %s", resp.Status, text)
	}
	return string(text), nil
}

// waitStatus reads the saga's status until it is final (succeed or
// failed), at most resultWait.
func (s *Store) waitStatus(ctx context.Context, gid string) (string, error) {
	deadline := time.Now().Add(resultWait)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.dtmURL+"/query?gid="+gid, nil)
		if err != nil {
			return "", err
		}
		resp, err := s.http.Do(req)
		if err != nil {
			return "", fmt.Errorf("query: %w", err)
		}
		var q struct {
			Transaction *struct {
				Status string `json:"status"`
			} `json:"transaction"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&q)
		resp.Body.Close()
		if err != nil {
			return "", fmt.Errorf("query: %w", err)
		}
		if q.Transaction != nil && (q.Transaction.Status == "succeed" || q.Transaction.Status == "failed") {
			return q.Transaction.Status, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the saga is not finished after %v (%+v)", resultWait, q.Transaction)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// newGID asks dtm for a gid: the store's check that dtm answers.
func (s *Store) newGID(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.dtmURL+"/newGid", nil)
	if err != nil {
		return "", err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r struct {
		Gid string `json:"gid"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Gid == "" {
		return "", fmt.Errorf("newGid answered %s: %v", resp.Status, err)
	}
	return r.Gid, nil
}

// branch answers dtm the way dtm's SDK does: 200 {"dtm_result":"SUCCESS"},
// or 409 {"dtm_result":"FAILURE"} for a business failure (roll back).
func branch(w http.ResponseWriter, ok bool) {
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"dtm_result":"FAILURE"}`)
		return
	}
	io.WriteString(w, `{"dtm_result":"SUCCESS"}`)
}

// ownRun serves a branch call only when its URL carries this Store's
// nonce. dtm keeps the sagas of an interrupted run and retries their
// branches at the URLs that run registered; a later run whose branch
// service got the same loopback port would otherwise apply the old run's
// captures to its own rows.
func (s *Store) ownRun(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("run") != s.nonce {
			refuseStale(w, r)
			return
		}
		h(w, r)
	}
}

// refuseStale answers a call that is not one of this run's branches (a
// saga of another run, or of a bench built before the nonce was in the
// path) without touching anything. It answers as a business failure, 409
// FAILURE: dtm v1.17.3 (dtmsvr getBranchResult) then marks a saga's action
// failed and never calls it again, and rolls the saga back. A compensation
// has no failed state in dtm: anything but success is retried with a
// doubling interval, so a stale compensation keeps being refused, never
// applied. Success is never answered: it would tell dtm that the old
// run's branch did its work.
func refuseStale(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusConflict)
	io.WriteString(w, `{"dtm_result":"FAILURE","error":"not a branch of this run"}`)
}

func readPayload(r *http.Request) (*stepPayload, error) {
	var p stepPayload
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&p); err != nil {
		return nil, err
	}
	return &p, nil
}

// handleAction captures one step's group.
func (s *Store) handleAction(w http.ResponseWriter, r *http.Request) {
	if s.empty.Load() {
		branch(w, true)
		return
	}
	p, err := readPayload(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	act, comp := p.keys()
	g := inventory.GroupKey{SKU: p.SKU, Condition: p.Condition, Source: p.Source}
	index, before, after := redis.GroupKeys(g)
	rec, err := actionScript.Run(r.Context(), s.client, []string{act, comp, index},
		before, after, p.SKU, p.Condition, p.Source, p.N, p.First, retentionMS).Text()
	if err != nil {
		// dtm retries a branch that did not answer success or failure.
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	branch(w, !strings.HasPrefix(rec, "I"))
}

// handleCompensate releases what the step's action took.
func (s *Store) handleCompensate(w http.ResponseWriter, r *http.Request) {
	if s.empty.Load() {
		branch(w, true)
		return
	}
	p, err := readPayload(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	act, comp := p.keys()
	if err := compensateScript.Run(r.Context(), s.client, []string{act, comp}, retentionMS).Err(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	branch(w, true)
}

var (
	_ store.Orderer       = (*session)(nil)
	_ store.EmptyBrancher = (*Store)(nil)
	_ store.Describer     = (*Store)(nil)
)

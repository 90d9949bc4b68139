package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"allot/client"
	"allot/inventory"
)

// RouterConfig configures a Router.
type RouterConfig struct {
	// URLs are the cluster's NATS servers, comma-separated.
	URLs string
	// Coordinator names this router in the records of its cross-shard
	// holds and orders. A router restarted under the same name recovers
	// its own undecided ones at once (Recover); others' only after
	// RecoverAfter. So a name given must be this router's alone while it
	// runs: two routers running under one name each take the other's
	// undecided records for their own, and one's Recover (RecoverEvery)
	// cancels the other's order in flight. Default: a name made for each
	// Router by NewRouter, <hostname>-<pid>-<8 random hex digits>
	// (Router.Coordinator), which no other router has, in this process
	// (several Routers) or another (containers whose hostname and pid
	// agree); no later router recovers as it.
	Coordinator string
	// Client holds the settings of each shard's connection pool; Addr is
	// ignored (each shard's comes from its lease).
	Client client.Config
	// HoldTTL is the TTL of the holds of a cross-shard order (default
	// 30s): the last safety net if its coordinator dies and is never
	// recovered.
	HoldTTL time.Duration
	// LeaseTTL is the shards' lease TTL (their nodes' --lease-ttl): a
	// shard's failover takes at least that long (default: the longest TTL
	// the shards' lease buckets record when NewRouter runs, or 3s, the
	// nodes' default, while no shard has one). NewRouter refuses a TTL
	// given here that is shorter than a shard's.
	LeaseTTL time.Duration
	// CommitMargin: a cross-shard order or hold is confirmed only while
	// each of its parts is at least this far from its deadline; closer,
	// it is cancelled (an order) or reported expired (a hold), so that no
	// part can expire while another is confirmed. It must cover what can
	// pass between the decision and a part's confirm: a failover of the
	// part's shard (the lease TTL, then the new primary's catch up), and
	// how far a shard's clock, which stamped the part's deadline, runs
	// ahead of this router's, which decides (default 2 × LeaseTTL +
	// clockSkewMax: 8s with the default TTL; at least LeaseTTL, or the
	// config is refused).
	CommitMargin time.Duration
	// Retention is how long the records of cross-shard holds and orders
	// are kept (default 24h): a repeat within it gets the first outcome.
	Retention time.Duration
	// RetryFor is how long a call to a shard keeps retrying while the
	// shard has no reachable primary (a failover) (default 10s). The
	// confirms of a cross-shard order decided to confirm are retried
	// longer: until its holds' deadline (HoldTTL), past which a part can
	// only answer EXPIRED (and the order would be partial).
	RetryFor time.Duration
	// AttemptTimeout bounds one attempt at a shard's primary, so that a
	// primary that stopped answering without closing its connections (a
	// paused process, a frozen machine) does not hold a call for as long
	// as the caller's context allows, or for ever: past it, the pool is
	// dropped, the lease read again, and the op retried on the new
	// primary when repeating it is safe (an unkeyed capture or release
	// ends with an unknown outcome). Default: LeaseTTL + 2s, by when a
	// paused primary has lost its lease and a standby took over; negative:
	// none.
	AttemptTimeout time.Duration
	// RecoverAfter: Recover cancels another coordinator's undecided
	// (holding) record once it is this old (default 30s). A decided one
	// (confirming, cancelling) is finished at any age: its compare-and-set
	// already fixed the outcome, and waiting as long as the holds live
	// left it to be confirmed at their deadline, a part EXPIRED.
	RecoverAfter time.Duration
	// RecoverEvery, when above zero, runs Recover in the background that
	// often (at least recoverEveryMin), from NewRouter until Close, and
	// logs what each pass finished and its errors. Without it, a record a
	// crashed coordinator left waits for a repeat, a Confirm or `allot
	// shards recover`: a decided order stays confirmed on some shards and
	// held on the others, and one left past its holds' deadline ends
	// partial. A pass reads every record kept (Retention): at high order
	// rates, seconds apart, not milliseconds. Default 0: off, Recover runs
	// only when called.
	RecoverEvery time.Duration
	// Fault breaks the protocol on purpose, for the test that proves the
	// cross-shard test can fail: FaultNoDecision. Empty in any real use.
	Fault string
	// Logger receives recoveries and failures (default: none).
	Logger *slog.Logger

	// missLeaseUpdate, when set (tests), is asked at each update of a
	// lease's watch; true drops it, as if the watch had stalled.
	missLeaseUpdate func() bool
}

// clockSkewMax is how far the clocks of the routers and of the shards'
// nodes may differ. A part's deadline is stamped by its shard's clock,
// and the router compares it with its own (Router.run, Router.decide):
// a shard whose clock runs ahead expires the part that much before the
// router expects. Machines synchronised by NTP differ by milliseconds;
// beyond this, the commit margin no longer covers a failover.
const clockSkewMax = 2 * time.Second

// commitMarginFor is the default commit margin for shards whose lease TTL
// is ttl: a failover (the TTL for the lease to lapse, as much again for
// the new primary's catch up and fence) and the clocks' skew.
func commitMarginFor(ttl time.Duration) time.Duration { return 2*ttl + clockSkewMax }

// recoverEveryMin bounds RecoverEvery from below: a pass lists and reads
// every record kept, and passes back to back would load the orders
// bucket's stream for nothing.
const recoverEveryMin = 100 * time.Millisecond

// FaultNoDecision confirms a cross-shard order's parts without first
// recording the decision: a coordinator that dies among the confirms
// leaves a record that says "holding", and recovery cancels what is left.
const FaultNoDecision = "no-decision"

// Validate fills defaults and checks the fields.
func (c *RouterConfig) Validate() error {
	if strings.TrimSpace(c.URLs) == "" {
		return errors.New("cluster: no NATS URL given")
	}
	// No name given: NewRouter makes one for each Router it makes
	// (coordinatorDefault), not Validate, which a caller may run once on
	// a config that then makes several routers.
	if c.Coordinator != "" {
		if d := inventory.CheckID(c.Coordinator); d != "" {
			return fmt.Errorf("cluster: coordinator name %s", d)
		}
	}
	if c.HoldTTL == 0 {
		c.HoldTTL = 30 * time.Second
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = leaseTTLDefault
	}
	if c.CommitMargin == 0 {
		c.CommitMargin = commitMarginFor(c.LeaseTTL)
	}
	if c.Retention == 0 {
		c.Retention = 24 * time.Hour
	}
	if c.RetryFor == 0 {
		c.RetryFor = 10 * time.Second
	}
	if c.RecoverAfter == 0 {
		c.RecoverAfter = 30 * time.Second
	}
	if c.RecoverEvery < 0 || (c.RecoverEvery > 0 && c.RecoverEvery < recoverEveryMin) {
		return fmt.Errorf("cluster: recover interval %v: want 0 (no background recovery) or at least %v", c.RecoverEvery, recoverEveryMin)
	}
	if c.CommitMargin < c.LeaseTTL {
		return fmt.Errorf("cluster: commit margin %v is below the shards' lease TTL %v: a shard that fails over between the decision and its confirm (the TTL, then a catch up) finds its part expired while the others are confirmed (a partial order); give at least %v (2 × the TTL + %v of clock skew)",
			c.CommitMargin, c.LeaseTTL, commitMarginFor(c.LeaseTTL), clockSkewMax)
	}
	if c.HoldTTL <= c.CommitMargin {
		return fmt.Errorf("cluster: hold TTL %v must exceed the commit margin %v", c.HoldTTL, c.CommitMargin)
	}
	if c.HoldTTL.Milliseconds() > 604800000 {
		return fmt.Errorf("cluster: hold TTL %v is over 7 days", c.HoldTTL)
	}
	switch c.Fault {
	case "", FaultNoDecision:
	default:
		return fmt.Errorf("cluster: unknown router fault %q", c.Fault)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Client.Addr = "127.0.0.1:1" // each shard's is set when its pool is made
	return c.Client.Validate()
}

// Router is a client of a sharded cluster: it sends each op to the
// primary of the shard that holds its group, follows failovers, and runs
// holds and orders whose lines span shards as two-phase holds (orders.go).
// The catalog's ops (CatalogSet, CatalogGet, CatalogDel, Search) go to the
// primary of the catalog's shard (ShardMap.CatalogShard) the same way
// (router_catalog.go); a search's available counts the SKU's units on
// that shard only, not over the cluster.
type Router struct {
	cfg    RouterConfig
	nc     *nats.Conn
	js     jetstream.JetStream
	m      ShardMap
	orders jetstream.KeyValue
	names  map[string]names

	mu    sync.Mutex
	pools map[string]*client.Client // by shard: a pool to the primary the lease named
	// watched: the shards whose lease a goroutine follows (followLease),
	// from their first pool until Close (stopWatch, watchers).
	watched   map[string]bool
	stopWatch context.CancelFunc
	watchCtx  context.Context
	watchers  sync.WaitGroup

	seq      atomic.Uint64
	start    int64
	inflight sync.Map // ids of the cross-shard holds and orders this router is running
	// crash, when set (tests), is asked before each step of a
	// cross-shard order; true stops the order there, as if its
	// coordinator died (errCrashed).
	crash func(step string, part int) bool

	// The background recovery (RecoverEvery): Close calls stopRecover and
	// waits for recoverDone. Both nil when it is off.
	stopRecover context.CancelFunc
	recoverDone chan struct{}
}

// NewRouter connects to the cluster and reads its shard map (a cluster
// without one is the single shard "main").
func NewRouter(ctx context.Context, cfg RouterConfig) (*Router, error) {
	leaseGiven, marginGiven := cfg.LeaseTTL != 0, cfg.CommitMargin != 0
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Coordinator == "" {
		cfg.Coordinator = coordinatorDefault()
	}
	nc, js, err := connect(cfg.URLs, "allot router "+cfg.Coordinator)
	if err != nil {
		return nil, err
	}
	r := &Router{cfg: cfg, nc: nc, js: js, names: map[string]names{}, pools: map[string]*client.Client{},
		watched: map[string]bool{}, start: time.Now().UnixNano()}
	r.watchCtx, r.stopWatch = context.WithCancel(context.Background())
	fail := func(err error) (*Router, error) { r.stopWatch(); nc.Close(); return nil, err }
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, found, err := readShardMap(rctx, js)
	if err != nil {
		return fail(err)
	}
	if !found {
		m = ShardMap{Shards: []string{"main"}, Hash: HashFNV1a}
	}
	r.m = m
	for _, s := range m.Shards {
		n, err := namesOf(s)
		if err != nil {
			return fail(err)
		}
		r.names[s] = n
	}
	if err := r.fitLeaseTTL(rctx, leaseGiven, marginGiven); err != nil {
		return fail(err)
	}
	if r.orders, err = ordersKV(rctx, js, r.cfg.Retention); err != nil {
		return fail(err)
	}
	if r.cfg.RecoverEvery > 0 {
		// Not ctx: it bounds NewRouter, and the loop lives until Close.
		lctx, stop := context.WithCancel(context.Background())
		r.stopRecover, r.recoverDone = stop, make(chan struct{})
		go r.recoverLoop(lctx)
	}
	return r, nil
}

// recoverLoop runs Recover every RecoverEvery until ctx ends (Close). A
// pass that finds nothing to finish logs nothing; records left to their
// coordinators (Skipped) are another router's business and are not news.
func (r *Router) recoverLoop(ctx context.Context) {
	defer close(r.recoverDone)
	tick := time.NewTicker(r.cfg.RecoverEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		st, err := r.Recover(ctx)
		if ctx.Err() != nil {
			return // closed during the pass: what it left, the next pass of any router finds
		}
		if st.Confirmed+st.Cancelled+st.Partial > 0 {
			r.cfg.Logger.Info("cluster: background recovery", "confirmed", st.Confirmed, "cancelled", st.Cancelled,
				"partial", st.Partial, "left", st.Skipped)
		}
		if err != nil {
			r.cfg.Logger.Error("cluster: background recovery", "err", err)
		}
	}
}

// fitLeaseTTL reads the lease TTL of each shard whose lease bucket exists
// (its nodes' --lease-ttl). One longer than the config's is taken, with
// the commit margin it calls for, unless LeaseTTL was given (leaseGiven):
// that is refused, as is a given margin (marginGiven) then below it.
func (r *Router) fitLeaseTTL(ctx context.Context, leaseGiven, marginGiven bool) error {
	var longest time.Duration
	var of string
	for _, s := range r.m.Shards {
		st, err := r.js.Stream(ctx, "KV_"+r.names[s].lease)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue // not started yet
		}
		if err != nil {
			return fmt.Errorf("cluster: the lease bucket of shard %s: %w", s, err)
		}
		if ttl := st.CachedInfo().Config.MaxAge; ttl > longest {
			longest, of = ttl, s
		}
	}
	if longest <= r.cfg.LeaseTTL {
		return nil
	}
	if leaseGiven {
		return fmt.Errorf("cluster: shard %s's lease TTL is %v (its nodes' --lease-ttl), longer than the router's LeaseTTL %v: its failovers take longer than the commit margin allows for; give LeaseTTL %v (or none: the router reads it)",
			of, longest, r.cfg.LeaseTTL, longest)
	}
	r.cfg.LeaseTTL = longest
	if !marginGiven {
		r.cfg.CommitMargin = commitMarginFor(longest)
	}
	return r.cfg.Validate()
}

// ordersKV opens the records' bucket, creating it (with retention) when it
// is missing. Its reads go to the stream's leader: a direct get may be
// answered by a replica that has not seen the last write, and a decision
// read from a stale record would be refused by the compare-and-set only
// after a wasted round.
func ordersKV(ctx context.Context, js jetstream.JetStream, retention time.Duration) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, ordersBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: ordersBucket, History: 1, TTL: retention, Storage: jetstream.FileStorage, Replicas: 3,
			Description: "allot cross-shard holds and orders: each one's lines and the coordinator's decision"})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, ordersBucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: the orders bucket %s: %w", ordersBucket, err)
	}
	s, err := js.Stream(ctx, "KV_"+ordersBucket)
	if err != nil {
		return nil, fmt.Errorf("cluster: the orders bucket's stream: %w", err)
	}
	if cfg := s.CachedInfo().Config; cfg.AllowDirect {
		cfg.AllowDirect = false
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			return nil, fmt.Errorf("cluster: make the orders bucket read from its leader: %w", err)
		}
		if kv, err = js.KeyValue(ctx, ordersBucket); err != nil {
			return nil, fmt.Errorf("cluster: the orders bucket %s: %w", ordersBucket, err)
		}
	}
	return kv, nil
}

// Map returns the cluster's shard map.
func (r *Router) Map() ShardMap { return r.m }

// Coordinator returns the name this router writes in the records of its
// cross-shard holds and orders: RouterConfig.Coordinator, or the one
// NewRouter made. Recover run under it (RouterConfig.Coordinator, `allot
// shards recover --coordinator`) takes this router's undecided records for
// its own and cancels them at once, so it is for when this router is
// gone.
func (r *Router) Coordinator() string { return r.cfg.Coordinator }

// coordinatorDefaultBytesMax bounds a default coordinator name: orderHold
// keeps the first 34 bytes of the name in the hold id of an order without
// an idempotency key, and the random part, last, must be among them.
const coordinatorDefaultBytesMax = 34

// coordinatorDefault returns a coordinator name for a Router given none:
// <hostname>-<pid>-<8 random hex digits>, the hostname cut to fit
// coordinatorDefaultBytesMax. The hostname and pid say where it runs; the
// random part keeps two Routers of one process apart, and two processes
// whose hostname and pid agree (containers).
//
// The name was <hostname>-<pid> once: every Router of a process shared
// it, took the others' undecided records for its own, and its Recover
// (RouterConfig.RecoverEvery) cancelled their orders in flight. A counter
// per process instead of randomness would still clash across containers.
func coordinatorDefault() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("cluster: no randomness for a coordinator name: " + err.Error())
	}
	suffix := fmt.Sprintf("-%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
	host, _ := os.Hostname()
	if host == "" {
		host = "router"
	}
	for len(host)+len(suffix) > coordinatorDefaultBytesMax {
		_, size := utf8.DecodeLastRuneInString(host)
		host = host[:len(host)-size]
	}
	return host + suffix
}

// Close stops the background recovery (and waits for its pass to end),
// then closes the pools and the NATS connection.
func (r *Router) Close() {
	if r.stopRecover != nil {
		r.stopRecover()
		<-r.recoverDone
	}
	if r.stopWatch != nil {
		// Under mu, as pool checks watchCtx and adds a watcher: none is
		// added once Wait may have returned.
		r.mu.Lock()
		r.stopWatch()
		r.mu.Unlock()
		r.watchers.Wait()
	}
	r.mu.Lock()
	for _, p := range r.pools {
		p.Close()
	}
	r.pools = map[string]*client.Client{}
	r.mu.Unlock()
	r.nc.Close()
}

// errNoPrimary: the shard's lease names nobody (a failover under way).
var errNoPrimary = fmt.Errorf("cluster: the shard has no primary: %w", client.ErrUnavailable)

// pool returns the pool to shard's primary, reading the lease when there
// is none.
func (r *Router) pool(ctx context.Context, shard string) (*client.Client, error) {
	r.mu.Lock()
	p := r.pools[shard]
	r.mu.Unlock()
	if p != nil {
		return p, nil
	}
	h, found, err := readHolder(ctx, r.js, r.names[shard])
	if err != nil {
		// Nothing was sent: a request without a key may be retried.
		return nil, fmt.Errorf("%w (%w)", err, client.ErrNotSent)
	}
	if !found || h.RESP == "" {
		return nil, fmt.Errorf("shard %s: %w", shard, errNoPrimary)
	}
	cfg := r.cfg.Client
	cfg.Addr = h.RESP
	p, err = client.New(cfg)
	if err != nil {
		// A config the client refuses (the lease's address among it):
		// retrying would meet the same refusal.
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.pools[shard]; old != nil {
		p.Close()
		return old, nil
	}
	r.pools[shard] = p
	if r.watchCtx != nil && !r.watched[shard] && r.watchCtx.Err() == nil {
		r.watched[shard] = true
		r.watchers.Add(1)
		go func() {
			defer r.watchers.Done()
			r.followLease(r.watchCtx, shard)
		}()
	}
	return p, nil
}

// followLease drops shard's pool whenever the lease names a primary at
// another address, until ctx ends (Close). A pool dials its address
// again when the server closed a connection, and a node answers reads as
// a standby: without it, a primary killed and started again at its
// address (from an empty data directory, still catching up) served the
// router's reads until its next write was refused, and a read after the
// router's own acknowledged write did not see it
// (TestRouterReadsFollowTheLeaseNotTheAddress). Writes need no watch: a
// standby refuses them, and call then reads the lease. Nor do reads, for
// being right: until the watch's update arrives, a read that meets the
// standby is refused by checkPrimary; the watch moves the pool before
// that, sparing the round trips.
//
// A KV watch can go silent without an error (its consumer lost on the
// server, once on a loaded machine for over 20 s after a takeover), and a
// held lease is renewed every quarter TTL: a watch that brought nothing
// for twice the TTL is ended, the lease read once (the pool moved if it
// names another address) and the watch started again, a second later as
// after any watch that ended.
func (r *Router) followLease(ctx context.Context, shard string) {
	for ctx.Err() == nil {
		r.watchLease(ctx, shard)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // the bucket not there, NATS away
		}
	}
}

// watchLease is one watch of followLease's, until it fails or ctx ends.
func (r *Router) watchLease(ctx context.Context, shard string) {
	kv, err := r.js.KeyValue(ctx, r.names[shard].lease)
	if err != nil {
		return
	}
	w, err := kv.Watch(ctx, leaseKey)
	if err != nil {
		return
	}
	defer w.Stop()
	silence := 2 * r.cfg.LeaseTTL
	quiet := time.NewTimer(silence)
	defer quiet.Stop()
	for {
		var e jetstream.KeyValueEntry
		var ok bool
		select {
		case <-ctx.Done():
			return
		case <-quiet.C:
			r.checkLease(ctx, shard, silence)
			return
		case e, ok = <-w.Updates():
		}
		if !ok {
			return
		}
		if r.cfg.missLeaseUpdate != nil && r.cfg.missLeaseUpdate() {
			continue // tests: a watch that stopped bringing updates
		}
		quiet.Reset(silence)
		if e == nil || e.Operation() != jetstream.KeyValuePut {
			continue // the initial values' end; a lease dropped (none named yet)
		}
		var h Holder
		if json.Unmarshal(e.Value(), &h) != nil {
			continue
		}
		r.movePool(shard, h.RESP)
	}
}

// checkLease reads shard's lease once, for a watch that brought nothing
// for silence, and moves the pool as an update would have.
func (r *Router) checkLease(ctx context.Context, shard string, silence time.Duration) {
	h, found, err := readHolder(ctx, r.js, r.names[shard])
	if err != nil || !found || h.RESP == "" {
		return // nobody named (a failover under way), NATS away: the next watch tells
	}
	if r.movePool(shard, h.RESP) {
		r.cfg.Logger.Warn("cluster: the lease's watch brought no update, the lease names another primary", "shard", shard,
			"silence", silence, "primary", h.RESP)
	}
}

// movePool drops shard's pool when it is not at addr, the address the
// lease names; it says whether it did.
func (r *Router) movePool(shard, addr string) bool {
	r.mu.Lock()
	p := r.pools[shard]
	r.mu.Unlock()
	if p == nil || p.Addr() == addr {
		return false
	}
	r.forget(shard, p)
	return true
}

// forget drops shard's pool p (its primary failed us), so that the next
// call reads the lease again.
func (r *Router) forget(shard string, p *client.Client) {
	r.mu.Lock()
	if r.pools[shard] == p {
		delete(r.pools, shard)
		defer p.Close()
	}
	r.mu.Unlock()
}

// call runs op on shard's primary. A refusal (the primary is gone, or
// changed) is retried for RetryFor, on whichever node the lease names;
// an unknown outcome is retried the same way when repeating op cannot
// apply it twice (client.Client.Do's rule).
//
// Once an attempt may have been applied (its outcome is unknown), the
// call's error is an unknown outcome whatever the later attempts met: a
// retry refused because the primary died with the first one must not
// tell the caller "not applied".
func (r *Router) call(ctx context.Context, shard string, op inventory.Op) (inventory.Result, error) {
	return r.callUntil(ctx, shard, op, time.Now().Add(r.cfg.RetryFor))
}

// callUntil is call retrying until deadline instead of for RetryFor.
func (r *Router) callUntil(ctx context.Context, shard string, op inventory.Op, deadline time.Time) (inventory.Result, error) {
	var lost error // the first attempt that may have been applied
	fail := func(err error) error {
		if lost == nil || errors.Is(err, client.ErrOutcomeUnknown) {
			return fmt.Errorf("shard %s: %w", shard, err)
		}
		if err == lost { // maybe applied: it wraps no refusal, and its cause (a deadline) stays visible
			return fmt.Errorf("shard %s: %w: %w", shard, err, client.ErrOutcomeUnknown)
		}
		return fmt.Errorf("shard %s: %v (an earlier attempt's outcome is unknown: %v): %w", shard, err, lost, client.ErrOutcomeUnknown)
	}
	for {
		p, err := r.pool(ctx, shard)
		var res inventory.Result
		if err == nil {
			actx, cancel := ctx, context.CancelFunc(func() {})
			if d := r.attemptTimeout(); d > 0 {
				actx, cancel = context.WithTimeout(ctx, d)
			}
			res, err = send(actx, p, op)
			timedOut := err != nil && client.ContextEnded(actx) != nil && client.ContextEnded(ctx) == nil
			cancel()
			if err == nil {
				return res, nil
			}
			if timedOut {
				err = fmt.Errorf("no reply within %v (the attempt timeout): %w", r.attemptTimeout(), err)
			}
			if timedOut || primaryFailed(ctx, err) {
				r.forget(shard, p)
			}
			if lost == nil && op.Kind.Mutates() && client.MaybeApplied(err) {
				lost = err
			}
		}
		if !client.Retryable(&op, err) || client.ContextEnded(ctx) != nil || time.Now().After(deadline) {
			return res, fail(err)
		}
		select {
		case <-ctx.Done():
			// The last attempt's error keeps its class: every attempt
			// so far was refused or never sent (else lost says so), and
			// the bare context error read as "maybe applied".
			return res, fail(fmt.Errorf("%w (then, waiting to retry: %w)", err, ctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// attemptTimeout is RouterConfig.AttemptTimeout with its default.
func (r *Router) attemptTimeout() time.Duration {
	if d := r.cfg.AttemptTimeout; d != 0 {
		return d
	}
	return r.cfg.LeaseTTL + clockSkewMax
}

// send runs op on one connection of p, which does not follow a "not
// primary" refusal as Client.Do would: the refusal comes back to call,
// which drops the pool and reads the lease again. Following it inside the
// pool left the pool at the old primary once it came back as a standby,
// and every read of the shard was then served a moment behind the writes.
// A catalog write or get, which Conn.Do does not encode, goes to its
// Conn method (sendCatalog).
//
// A read goes only on a connection whose node said it is the primary
// (checkPrimary): a standby refuses a write, but answers a read from what
// it applied so far.
func send(ctx context.Context, p *client.Client, op inventory.Op) (inventory.Result, error) {
	cn, err := p.Conn(ctx)
	if err != nil {
		return inventory.Result{}, err
	}
	defer cn.Close()
	if !op.Kind.Mutates() {
		if err := checkPrimary(ctx, p, cn); err != nil {
			return inventory.Result{}, err
		}
	}
	switch op.Kind {
	case inventory.KindCatalogSet, inventory.KindCatalogDel, inventory.KindCatalogGet:
		return sendCatalog(ctx, cn, &op)
	}
	return cn.Do(ctx, op, nil)
}

// errStandby refuses a read on a connection whose node is a standby
// (checkPrimary): nothing was sent.
var errStandby = fmt.Errorf("cluster: the node at the pool's address is a standby, not the shard's primary: %w", client.ErrUnavailable)

// checkPrimary asks cn's node, the first time a read goes on cn, whether
// it is the primary (HELLO's role "master"), and refuses the read when it
// is not (errStandby: call drops the pool and reads the lease again).
//
// The pool names an address, not a node: after a failover a node started
// again at the old primary's address is a standby, still catching up, and
// a pool that had not heard of the takeover (the lease's watch,
// followLease, comes a moment later, longer on a loaded machine; a lease
// read from a replica behind) dialled it again and read from it: a read
// after the router's own acknowledged write missed that write
// (TestRouterReadAfterWriteBeforeTheWatchUpdate). The connection keeps a
// yes for its life (Conn.SaysPrimary says why that is safe).
func checkPrimary(ctx context.Context, p *client.Client, cn *client.Conn) error {
	primary, role, err := cn.SaysPrimary(ctx)
	if err != nil {
		return err
	}
	if !primary {
		return fmt.Errorf("%s says role %q: %w", p.Addr(), role, errStandby)
	}
	return nil
}

// primaryFailed reports whether err, from a call to a shard's pool, says
// the pool's primary failed us (drop the pool, read the lease again): a
// refusal, a connection never made, a closed pool, or an I/O error the
// caller's context did not cause. A caller's own deadline or cancellation
// is not the primary's: closing the pool then failed the other callers
// holding it ("client: closed").
func primaryFailed(ctx context.Context, err error) bool {
	if errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrClosed) {
		return true
	}
	if client.ContextEnded(ctx) != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, client.ErrConnect) {
		return true
	}
	var se *client.ServerError
	return !errors.As(err, &se) // a reply that is not a refusal is no failure of the primary
}

// Do runs op on the shard that holds its group: a capture, release,
// stock, get or available; a search on the catalog's shard (its hits'
// Available count the units on that shard only: router_catalog.go); a
// hold, order, confirm, cancel or hold-get goes to Hold, Order, Confirm,
// Cancel or HoldGet. lines is the buffer for a capture's allocation. A
// catalog write or get is refused: CatalogSet, CatalogDel and CatalogGet
// run them, with client.Client's results.
func (r *Router) Do(ctx context.Context, op inventory.Op, lines []inventory.Line) (inventory.Result, error) {
	var shard string
	switch op.Kind {
	case inventory.KindHold:
		return r.Hold(ctx, op.Hold, time.Duration(op.TTL)*time.Millisecond, op.Lines)
	case inventory.KindOrder:
		return r.Order(ctx, op.IdempotencyKey, op.Lines)
	case inventory.KindConfirm:
		return r.Confirm(ctx, op.Hold)
	case inventory.KindCancel:
		return r.Cancel(ctx, op.Hold)
	case inventory.KindHoldGet:
		return r.HoldGet(ctx, op.Hold)
	case inventory.KindCapture, inventory.KindRelease, inventory.KindStock, inventory.KindGet, inventory.KindAvailable:
		shard = r.m.Of(op.Key.Group())
	case inventory.KindSearch:
		shard = r.m.CatalogShard()
	case inventory.KindCatalogSet, inventory.KindCatalogDel, inventory.KindCatalogGet:
		return inventory.Result{}, fmt.Errorf("cluster: Router.Do does not run %s: CatalogSet, CatalogDel and CatalogGet do", op.Kind)
	default:
		return inventory.Result{}, fmt.Errorf("cluster: the router does not route %s", op.Kind)
	}
	if d := op.Check(); d != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: d}, nil
	}
	res, err := r.call(ctx, shard, op)
	if err == nil && op.Kind == inventory.KindCapture && lines != nil {
		res.Lines = append(lines[:0], res.Lines...)
	}
	return res, err
}

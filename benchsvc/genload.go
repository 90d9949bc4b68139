package benchsvc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"allot/bench"
)

// GenLoad is the body of the seed load-test bench's
// POST /test/gen-load/{store}:
//
//	{"threads":5,"load":1,"timeInMilis":1000,"transactional":false,"durable":true,"requestType":"READ"}
//
// It runs workload "rw" on the store; see GenLoadArgs for what each field
// becomes and docs/bench-serve.md for why.
type GenLoad struct {
	Threads       int    `json:"threads"`
	Load          int    `json:"load"`
	TimeInMilis   int64  `json:"timeInMilis"`
	Transactional bool   `json:"transactional"`
	Durable       bool   `json:"durable"`
	RequestType   string `json:"requestType"`
	// Lock is this service's addition for MODIFY_LOCKED: "hard" (the
	// default) or "soft".
	Lock string `json:"lock,omitempty"`
}

// GenLoadReply is the seed's answer, {"count","timeMs"}, with what this
// bench adds beside it.
type GenLoadReply struct {
	// Count is the number of requests completed (every store run of the
	// job summed); TimeMs the measured time they took.
	Count  int64 `json:"count"`
	TimeMs int64 `json:"timeMs"`
	// The run in the history, its state and throughput.
	ID        string  `json:"id"`
	State     string  `json:"state"`
	OpsPerSec float64 `json:"ops_per_sec"`
	Errors    int64   `json:"errors"`
	Error     string  `json:"error,omitempty"`
}

// Bounds of a gen-load request.
const (
	genLoadThreadsMax = 1024
	genLoadLoadMax    = 1000           // records per transaction (rw's --batch bound)
	genLoadTimeMax    = 60 * 60 * 1000 // one hour
	// genLoadOpsPerMs sizes --ops so that the time, not the op count,
	// ends a run on records on any store this machine runs (2M ops/s);
	// rw's READ and modifies hold nothing per op on records, so the
	// bound costs nothing there. A WRITE does (RecordOpsMax).
	genLoadOpsPerMs = 2000
	genLoadOpsMax   = 1 << 30
	genLoadTypes    = "READ, WRITE, MODIFY or MODIFY_LOCKED"
)

// RecordOpsMax bounds the ops of a rw run over HTTP that keeps a record
// in memory per op: a WRITE keeps every record it writes and reads them
// all back for the check, and a READ on a queue makes and publishes every
// message before the run (about 130 bytes an op in all: 2.2 GB at the
// bound). GenLoadOps caps a WRITE's time-sized ops at it, so that a
// store faster than that over timeInMilis ends early (timeMs says so);
// the command's parser refuses a run asking for more.
const RecordOpsMax = 1 << 24

// ParseGenLoad decodes and checks a gen-load body. Fields are the seed's;
// an unknown field is refused (a typo must not silently run defaults).
// Missing fields take the seed's defaults: threads 1, load 1,
// transactional false, durable false; timeInMilis and requestType are
// required.
func ParseGenLoad(body []byte) (GenLoad, error) {
	if len(body) > requestBytesMax {
		return GenLoad{}, badRequest("request body is larger than %d bytes", requestBytesMax)
	}
	g := GenLoad{Threads: 1, Load: 1, TimeInMilis: -1}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return GenLoad{}, badRequest("field %q must be a %v, got a JSON %s", te.Field, te.Type, te.Value)
		}
		return GenLoad{}, badRequest("body: %v", err)
	}
	if err := onlyValue(body, dec); err != nil {
		return GenLoad{}, err
	}
	g.RequestType = strings.ToUpper(strings.TrimSpace(g.RequestType))
	switch {
	case g.Threads < 1 || g.Threads > genLoadThreadsMax:
		return GenLoad{}, badRequest("threads must be from 1 to %d, got %d", genLoadThreadsMax, g.Threads)
	case g.Load < 1 || g.Load > genLoadLoadMax:
		return GenLoad{}, badRequest("load must be from 1 to %d, got %d", genLoadLoadMax, g.Load)
	case g.Load > 1 && !g.Transactional:
		return GenLoad{}, badRequest("load %d needs transactional: true: load is the records written per transaction; without one every request is its own autocommit", g.Load)
	case g.TimeInMilis == -1:
		return GenLoad{}, badRequest("timeInMilis is required (how long the load runs, in milliseconds)")
	case g.TimeInMilis < 1 || g.TimeInMilis > genLoadTimeMax:
		return GenLoad{}, badRequest("timeInMilis must be from 1 to %d, got %d", genLoadTimeMax, g.TimeInMilis)
	}
	switch g.RequestType {
	case "READ", "WRITE", "MODIFY", "MODIFY_LOCKED":
	case "":
		return GenLoad{}, badRequest("requestType is required: %s", genLoadTypes)
	default:
		return GenLoad{}, badRequest("requestType %q: want %s", g.RequestType, genLoadTypes)
	}
	switch g.Lock {
	case "", "hard", "soft":
	default:
		return GenLoad{}, badRequest("lock %q: want hard or soft", g.Lock)
	}
	if g.Lock != "" && g.RequestType != "MODIFY_LOCKED" && g.RequestType != "READ" {
		return GenLoad{}, badRequest("lock applies to MODIFY_LOCKED and READ, not %s", g.RequestType)
	}
	return g, nil
}

// GenLoadOps returns the --ops of a gen-load request: enough that the
// time ends the run, but for a WRITE, which keeps a record per op: at
// most RecordOpsMax. Config.GenLoadOps overrides it per store (a queue's
// READ consumes messages published before the run, one per op).
func GenLoadOps(g GenLoad) int64 {
	ops := min(g.TimeInMilis*genLoadOpsPerMs, genLoadOpsMax)
	if g.RequestType == "WRITE" {
		ops = min(ops, RecordOpsMax)
	}
	return ops
}

// GenLoadArgs is the bench command line a gen-load request becomes:
//
//	threads       -> --workers
//	timeInMilis   -> --duration (ms), and --ops (GenLoadOps) sized so that the time ends the run
//	requestType   -> --request-type
//	transactional -> --transactional, and load -> --batch (records per transaction)
//	durable       -> --durable and --durability fsync (true) or write (false):
//	                 the store's durable setting against its fast one
//	lock          -> --lock
func GenLoadArgs(storeName string, g GenLoad, ops int64) []string {
	args := []string{
		"--workload=rw",
		"--stores=" + storeName,
		"--workers=" + strconv.Itoa(g.Threads),
		"--duration=" + strconv.FormatInt(g.TimeInMilis, 10) + "ms",
		"--ops=" + strconv.FormatInt(ops, 10),
		"--request-type=" + g.RequestType,
		"--transactional=" + strconv.FormatBool(g.Transactional),
		"--durable=" + strconv.FormatBool(g.Durable),
	}
	if g.Durable {
		args = append(args, "--durability=fsync")
	} else {
		args = append(args, "--durability=write")
	}
	if g.Transactional {
		args = append(args, "--batch="+strconv.Itoa(g.Load))
	}
	if g.Lock != "" {
		args = append(args, "--lock="+g.Lock)
	}
	return args
}

// serveGenLoad runs a gen-load request as a run of the history (queued
// behind other runs on the store) and answers when it has finished.
func (s *Service) serveGenLoad(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	g, err := ParseGenLoad(body)
	if err != nil {
		writeSubmitError(w, err)
		return
	}
	storeName := r.PathValue("store")
	ops := GenLoadOps(g)
	if s.cfg.GenLoadOps != nil {
		ops = s.cfg.GenLoadOps(storeName, g)
	}
	rec, err := s.submit(json.RawMessage(bytes.TrimSpace(body)), GenLoadArgs(storeName, g, ops), storeName)
	if err != nil {
		writeSubmitError(w, err)
		return
	}
	id := rec.ID
	rec, err = s.Wait(r.Context(), id)
	if err != nil {
		// The client went away: the run is not worth finishing for nobody.
		s.Cancel(id)
		return
	}
	reply := GenLoadReply{ID: rec.ID, State: rec.State, Error: rec.Error}
	var seconds float64
	for _, res := range rec.Results {
		reply.Count += res.Ops
		reply.Errors += res.Errors
		seconds += res.Seconds
	}
	reply.TimeMs = int64(math.Round(seconds * 1000))
	if seconds > 0 {
		reply.OpsPerSec = float64(reply.Count) / seconds
	}
	status := http.StatusOK
	if len(rec.Results) == 0 || rec.Results[0].Status == bench.StatusServerDown || rec.Results[0].Status == bench.StatusFailed {
		// The store could not run it: 422 when it cannot express the
		// request (a queue has no record to MODIFY), 502 when it failed.
		status = http.StatusBadGateway
		if reply.Error == "" {
			reply.Error = fmt.Sprintf("the run ended %s without a result", rec.State)
		}
		if len(rec.Results) > 0 && rec.Results[0].Error != "" {
			reply.Error = rec.Results[0].Error
		}
		if strings.Contains(reply.Error, bench.ErrUnsupported.Error()) {
			status = http.StatusUnprocessableEntity
		}
	}
	writeJSON(w, status, reply)
}

// Package redisledger keeps an agent.Ledger's history and an agent.Guard's
// budget in Redis, so that many worker processes spend one budget and
// reuse each other's results. See [New] and [NewResultStore].
//
// Build the client with ContextTimeoutEnabled set (redis.UniversalOptions,
// redis.Options or redis.ClusterOptions): without it go-redis ignores
// context deadlines, and New refuses it.
//
// # Required configuration
//
// Redis must keep what it acknowledged: appendonly yes (appendfsync
// always, so that a crash of redis-server loses nothing acknowledged;
// everysec can lose about the last second), and no eviction (maxmemory 0,
// or maxmemory-policy noeviction). New reads the configuration with
// CONFIG GET (on every primary of a Cluster) and refuses any other with
// an error wrapping ErrUnsafeServer, unless Options.AllowUnsafeServer.
//
// # State loss
//
// A scope is one hash with its money, holds and their leases, ended
// reservation ids and history: Redis drops keys whole, so a scope is
// there whole or not at all. The hash carries the scope's epoch (an id
// chosen by the worker that created it) and a version counted up by
// every write. Every worker carries the epoch and the highest version it
// has seen into every script, which fails with an error wrapping
// agent.ErrStoreStateLost (itself wrapping agent.ErrStoreUnavailable: the
// Guard fails closed) when the hash is gone, has another epoch, or has a
// lower version (a restart from an older snapshot or an AOF that missed
// writes). The script then marks the scope lost, so every worker,
// including one that never saw it, fails closed too, until the keys
// expire (Options.IdleTTL) or an operator, with every worker stopped,
// reconciles the scope's spending and clears the mark ([Store.Recover]).
// A loss is never a fresh budget for a worker that had used the scope. It
// can go unseen only when no live worker saw a write it lost
// (every worker that did has died) and the whole scope vanished: a new
// worker then starts it afresh.
//
// # Functions
//
// The scripts run as one library of Redis Functions (FCALL) where New can
// load it (Redis 7 and later, FUNCTION allowed), which costs Redis less
// per call, and as scripts (EVALSHA) elsewhere or with
// Options.NoFunctions. Function calls of one Store that overlap are
// pipelined: sent together on one connection, each still its own call
// with its own reply and deadline (see Options.NoPipelining).
//
// # Overshoot
//
// A call runs only after Redis has atomically reserved its estimate
// against the budget, so the estimates of the calls that run never add up
// past it. The Guard's reservations are started (agent.Reservation): when
// a lease expires because the worker died, stalled or lost Redis for a
// whole lease, the hold is charged at its estimate, never given to
// another call; a settlement that comes later replaces the charge by the
// cost (agent.Report.LateSettlement). Spending can pass the budget in two
// ways, each bounded:
//
//   - A tool that reports a cost (agent.Completion.CostUSD) above its estimate
//     adds the difference: at most the sum of those differences over the
//     calls in flight when the last call was reserved.
//   - On a failover (Sentinel or Cluster), asynchronous replication can
//     lose writes the old primary acknowledged. A worker whose watermark
//     is past the new primary's version fails closed; settlements and
//     holds lost otherwise pass the budget by at most their costs and
//     estimates. With Options.WaitReplicas no acknowledged write is lost
//     to a failover onto a replica that acknowledged it.
//
// Counting errs the other way, never under, in three cases: a worker that
// dies between its reservation and its tool is charged the estimate; a
// reservation the Guard made before deciding not to run whose Cancel
// failed is charged at lease expiry; and a call whose settlement fails
// for Options.SettleTimeout is counted at its estimate instead of its
// cost.
package redisledger

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/leases"
	"github.com/redis/go-redis/v9"
)

// Options configures a [Store]. The zero value and nil both work.
type Options struct {
	// Prefix starts every key; it must not contain '{' or '}'. Empty means
	// "preflight".
	Prefix string
	// Lease is how long a reservation outlives a worker that stopped
	// renewing it (died, stalled, or lost Redis): then a started
	// reservation (every one of a Guard) is charged at its amount, one not
	// started is given back. A live worker renews its leases every Lease/3
	// until the call ends, so a call may run longer than Lease. Zero means
	// 15 s.
	Lease time.Duration
	// SettledRetention is how long the ids of ended reservations are kept
	// to answer a repeated Settle or Reserve. Zero means 24 h.
	SettledRetention time.Duration
	// IdleTTL makes a scope's keys expire when it has not been written to
	// for that long. Every reservation, settlement, release, appended
	// entry and lease renewal is a write: while a call is in flight its
	// renewals keep the scope alive. A worker that knew the scope finds it
	// gone and fails closed with agent.ErrStoreStateLost; only a worker
	// that never saw the scope starts it afresh. It must be at least Lease
	// (New refuses a shorter one). Zero means 24 h; negative means the
	// keys never expire.
	IdleTTL time.Duration
	// Timeout bounds each call to Redis when the caller's context has no
	// earlier deadline. Zero means 5 s.
	Timeout time.Duration
	// SettleTimeout is how long Settle keeps retrying while Redis is
	// unreachable (the call already ran: its cost must be counted), within
	// the caller's deadline. Zero means 30 s.
	SettleTimeout time.Duration
	// NoFunctions makes the store run its Lua code as scripts (EVALSHA)
	// even where it could load it as a library of Redis Functions
	// (FUNCTION LOAD, FCALL; Redis 7 and later), which costs Redis less
	// per call. New loads the library when the server accepts it and
	// falls back to scripts otherwise: set NoFunctions for a server on
	// which the store must not create functions.
	NoFunctions bool
	// NoPipelining makes every call to Redis go on its own. By default,
	// calls of one Store that overlap (goroutines of one worker calling at
	// once) are sent together as one pipeline on one connection, at most
	// 64 at a time, which costs Redis less CPU per call: a call that finds
	// fewer than two in progress is sent at once, as without pipelining;
	// one that finds two is queued and sent with the others that queued
	// as soon as one of those has its reply. Each stays its own function call with its own
	// reply, and each caller's deadline is kept: a caller whose context
	// ends while its call is queued returns at once and the call is never
	// sent. Calls made as scripts (NoFunctions, or a server without Redis
	// Functions) are pipelined only with WaitReplicas (sent as EVAL).
	NoPipelining bool
	// WaitReplicas, when positive, makes every function call wait (WAIT,
	// in the same pipeline, one per pipeline) until that many replicas
	// have its writes, for a primary with replicas or a Cluster, so that
	// a failover to one of them cannot lose an acknowledged hold or
	// settlement. A call whose WAIT sees fewer replicas within
	// WaitTimeout (or the caller's deadline) did its writes on the
	// primary but is not acknowledged: a Reserve fails closed with an
	// error wrapping ErrNotReplicated and, as after a lost reply, releases
	// the hold in the background (the release is safe whichever copy
	// survives a failover: a hold that survives without it lapses with
	// its lease and, started, is charged: counted, never spent twice);
	// Settle, Cancel and Release retry within their deadlines, as when
	// Redis is unreachable (each retry writes again, so its WAIT covers
	// the first copy too). Each function call then writes the scope's
	// counters even when it changes nothing, so that WAIT covers what it
	// read. Calls made as scripts wait too (sent as EVAL). On a Cluster the
	// call and its WAIT go to the primary of the scope's slot; a call that
	// meets a moved slot (MOVED, ASK: a slot migration) fails and the next
	// one goes to the new primary. New refuses it with a *redis.Ring,
	// which would send WAIT to a shard of its choice. Zero: no WAIT
	// (replication is asynchronous; see "Overshoot").
	WaitReplicas int
	// WaitTimeout bounds each WAIT of WaitReplicas. Zero means 1 s.
	WaitTimeout time.Duration
	// AllowUnsafeServer makes New skip its check of the server's
	// configuration (see "Required configuration" in the package doc).
	// With a server that may evict the scope's keys or restart without
	// them, the loss is then seen only by the workers that had used the
	// scope; a worker that had not starts a fresh budget.
	AllowUnsafeServer bool
}

// Store is an agent.LedgerStore on Redis for one scope: the history and
// money of one customer's run. It is safe for concurrent use; every
// process that works for the scope opens its own Store on it.
type Store struct {
	c       redis.UniversalClient
	keys    []string
	lease   time.Duration
	keep    time.Duration
	idle    time.Duration
	timeout time.Duration
	settle  time.Duration
	fresh   string // the epoch this worker creates the scope with

	keeper *leases.Keeper
	// batch sends the function calls: pipelined when they overlap, each
	// at once with Options.NoPipelining; followed by WAIT with
	// Options.WaitReplicas.
	batch *batcher
	// functions is whether the server runs the store's library (see
	// script).
	functions atomic.Bool

	mu    sync.Mutex
	epoch string // the scope's epoch, once seen
	seen  int64  // the highest version of the scope seen
}

var _ agent.LedgerStore = (*Store)(nil)

// ErrNotReplicated is wrapped by the error of a call whose writes fewer
// than Options.WaitReplicas replicas acknowledged in time: it fails
// closed (see Options.WaitReplicas).
var ErrNotReplicated = errors.New("redisledger: the write did not reach Options.WaitReplicas replicas in time")

// ErrScope is wrapped by the error of New for an unusable scope.
var ErrScope = errors.New("redisledger: bad scope")

// ErrUnsafeServer is wrapped by the error of New for a Redis whose
// configuration can lose a scope (see "Required configuration" in the
// package doc).
var ErrUnsafeServer = errors.New("redisledger: the Redis configuration can lose the ledger")

// New returns the store of scope on c, a single Redis, a Cluster, a
// failover client or a Ring (its library is loaded on every shard),
// built with ContextTimeoutEnabled (New refuses a *redis.Client,
// *redis.ClusterClient or *redis.Ring without it: go-redis would
// otherwise ignore every deadline). Its key is Prefix + ":{" + scope +
// "}:s", a hash (the scope is the hash tag: the keys ":l" and ":d" of
// the same scope in an older version of this package live in the same
// Cluster slot, and a scope that version wrote is refused, see
// [Store.Keys]). scope must be 1 to 200 bytes without '{' or '}'. opts
// may be nil.
//
// Unless Options.AllowUnsafeServer, New reads the server's configuration
// (CONFIG GET, on every primary of a Cluster) and refuses, with an error
// wrapping ErrUnsafeServer, one that can evict keys (maxmemory set with a
// policy other than noeviction) or keeps no append-only file.
//
// Call Close when done, to stop renewing leases.
func New(c redis.UniversalClient, scope string, opts *Options) (*Store, error) {
	if scope == "" || len(scope) > 200 || strings.ContainsAny(scope, "{}") {
		return nil, fmt.Errorf("%w: %q must be 1 to 200 bytes without '{' or '}'", ErrScope, scope)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = "preflight"
	}
	if strings.ContainsAny(o.Prefix, "{}") {
		return nil, fmt.Errorf("%w: prefix %q contains '{' or '}'", ErrScope, o.Prefix)
	}
	if o.Lease <= 0 {
		o.Lease = 15 * time.Second
	}
	switch {
	case o.IdleTTL == 0:
		o.IdleTTL = 24 * time.Hour
	case o.IdleTTL < 0:
		o.IdleTTL = 0
	}
	if o.IdleTTL > 0 && o.IdleTTL < o.Lease {
		return nil, fmt.Errorf("redisledger: Options.IdleTTL (%v) is shorter than Options.Lease (%v): the scope's keys could expire while a lease still holds money; make IdleTTL at least Lease", o.IdleTTL, o.Lease)
	}
	if o.SettledRetention <= 0 {
		o.SettledRetention = 24 * time.Hour
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = 30 * time.Second
	}
	timeouts := true
	switch cc := c.(type) {
	case *redis.Client:
		timeouts = cc.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		timeouts = cc.Options().ContextTimeoutEnabled
	case *redis.Ring:
		timeouts = cc.Options().ContextTimeoutEnabled
	}
	if !timeouts {
		return nil, errors.New("redisledger: the client must be built with ContextTimeoutEnabled: without it go-redis ignores deadlines")
	}
	if _, ring := c.(*redis.Ring); ring && o.WaitReplicas > 0 {
		return nil, errors.New("redisledger: Options.WaitReplicas needs a *redis.Client or *redis.ClusterClient: a *redis.Ring sends WAIT, which has no key, to a shard of its choice, not always the one the call wrote to")
	}
	if !o.AllowUnsafeServer {
		ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
		defer cancel()
		if err := checkServer(ctx, c); err != nil {
			return nil, err
		}
	}
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	base := o.Prefix + ":{" + scope + "}:"
	s := &Store{
		c:       c,
		keys:    []string{base + "s", base + "l", base + "d"},
		lease:   o.Lease,
		keep:    o.SettledRetention,
		idle:    o.IdleTTL,
		timeout: o.Timeout,
		settle:  o.SettleTimeout,
		fresh:   strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + hex.EncodeToString(raw[:]),
	}
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = time.Second
	}
	s.batch = &batcher{c: c, keys: s.keys, timeout: o.Timeout, lanes: maxLanes, wait: max(o.WaitReplicas, 0), waitFor: o.WaitTimeout}
	if o.NoPipelining {
		s.batch.lanes = math.MaxInt
	}
	s.keeper = s.newKeeper()
	if !o.NoFunctions {
		ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
		defer cancel()
		s.functions.Store(loadLibrary(ctx, c) == nil)
	}
	return s, nil
}

// checkServer refuses a server that can evict keys or keeps no
// append-only file.
func checkServer(ctx context.Context, c redis.UniversalClient) error {
	one := func(ctx context.Context, n redis.UniversalClient, node string) error {
		v, err := n.ConfigGet(ctx, "*").Result()
		if err != nil {
			return fmt.Errorf("%w: CONFIG GET failed on %s (%v); set Options.AllowUnsafeServer to use a server whose configuration cannot be read", ErrUnsafeServer, node, err)
		}
		if v["maxmemory"] != "0" && v["maxmemory-policy"] != "noeviction" {
			return fmt.Errorf("%w: %s has maxmemory %s with maxmemory-policy %s, which can evict the ledger; use maxmemory-policy noeviction", ErrUnsafeServer, node, v["maxmemory"], v["maxmemory-policy"])
		}
		if v["appendonly"] != "yes" {
			return fmt.Errorf("%w: %s has appendonly %q: a restart loses or rolls back the ledger; use appendonly yes with appendfsync always", ErrUnsafeServer, node, v["appendonly"])
		}
		return nil
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return one(ctx, n, n.Options().Addr) })
	}
	return one(ctx, c, "the server")
}

// Close stops renewing the leases of this process's reservations; those
// still held expire. It does not close the client.
func (s *Store) Close() error {
	s.keeper.Close()
	return nil
}

// RenewLease renews the lease of reservation id, which another process
// made (see agent.Guard.Resume), from this process until Settle, Release
// or Cancel of id here, or StopLease; lease 0 means Options.Lease. A
// reservation no longer held is not renewed.
func (s *Store) RenewLease(id string, lease time.Duration) {
	if lease <= 0 {
		lease = s.lease
	}
	s.keeper.Hold(id, lease)
}

// StopLease stops renewing the lease of reservation id in this process
// (another process renews it now, see agent.Permit.Forget); the
// reservation stays held.
func (s *Store) StopLease(id string) { s.keeper.Drop(id) }

// Keys returns the Redis keys of the store's scope: one hash. (Versions
// before layout 2 kept a scope in three keys, this hash and the sorted
// sets Prefix + ":{" + scope + "}:l" and ":d"; a scope they wrote is
// refused with an error saying so: finish it with that version, or
// delete its keys once its money is settled.)
func (s *Store) Keys() []string { return append([]string(nil), s.keys[:1]...) }

// token is how the scripts name reservation id: the id itself when it is
// 1 to 200 bytes of [A-Za-z0-9._:-], else "~" and its hex (so that a
// token never holds a space, and two ids never share one).
func token(id string) string {
	if len(id) > 0 && len(id) <= 200 {
		safe := true
		for i := 0; i < len(id) && safe; i++ {
			c := id[i]
			safe = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
		}
		if safe {
			return id
		}
	}
	return "~" + hex.EncodeToString([]byte(id))
}

// fnv32 is the 32-bit FNV-1a hash of s.
func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// shards are the names of the lease shard fields.
var shards = func() (s [16]string) {
	for i := range s {
		s[i] = "H" + strconv.Itoa(i)
	}
	return s
}()

// shard is the lease shard field (H<n>) of token tk.
func shard(tk string) string { return shards[fnv32(tk)%16] }

// historyBuckets is how many buckets (fields f:<b>) hold the history:
// enough that two fingerprints of a full history rarely share one.
const historyBuckets = 1024

// bucket is the history bucket of fingerprint fp.
func bucket(fp string) string {
	return strconv.FormatUint(uint64(fnv32(fp)%historyBuckets), 10)
}

// readBucket is the bucket to read for the entries of fp: none ("") for
// the empty fingerprint, which matches no entry.
func readBucket(fp string) string {
	if fp == "" {
		return ""
	}
	return bucket(fp)
}

// storedEntry is a history entry as the scripts keep it.
type storedEntry struct {
	ID   string `json:"id"`
	FP   string `json:"fp"`
	O    string `json:"o"`
	Ref  string `json:"ref"`
	Goal string `json:"goal"`
	At   string `json:"at,omitempty"` // ms since the epoch, Redis's clock
	N    int64  `json:"n,omitempty"`  // the entry's number in the scope
}

// encodeEntry is the JSON of e without its time and its closing brace
// (the scripts add the time and the entry's number, then the brace), and
// the arguments the scripts read it by: its fingerprint, outcome, result
// reference and goal hash.
func encodeEntry(e agent.Entry) [5]string {
	b, _ := json.Marshal(storedEntry{ID: e.ToolCallID, FP: e.Fingerprint, O: string(e.Outcome), Ref: e.ResultReference, Goal: e.GoalHash})
	return [5]string{string(b[:len(b)-1]), e.Fingerprint, string(e.Outcome), e.ResultReference, e.GoalHash}
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// bounded gives ctx the store's Timeout when it has no earlier deadline.
func (s *Store) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= s.timeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.timeout)
}

// reply is a script's answer after the scope's epoch, version and
// balance: the four numbers and the string its head carries (see head in
// scripts.go), and, from the state script, the values after the head.
type reply struct {
	x    [4]int64
	tail string
	rest []any
}

// decodeHead reads a reply's head: the epoch (a 4-byte length and its
// bytes), ten little-endian doubles (version, spent and held as limbs,
// calls, then the script's four numbers) and the rest as its tail.
func decodeHead(h string) (epoch string, nums [10]int64, tail string, err error) {
	if len(h) < 4 {
		return "", nums, "", fmt.Errorf("redisledger: a script's reply of %d bytes", len(h))
	}
	n := int(binary.LittleEndian.Uint32([]byte(h[:4])))
	if len(h) < 4+n+80 {
		return "", nums, "", fmt.Errorf("redisledger: a script's reply of %d bytes", len(h))
	}
	epoch, h = h[4:4+n], h[4+n:]
	for i := range nums {
		f := math.Float64frombits(binary.LittleEndian.Uint64([]byte(h[8*i : 8*i+8])))
		if f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
			return "", nums, "", fmt.Errorf("redisledger: %v in a script's reply is not an integer", f)
		}
		nums[i] = int64(f)
	}
	return epoch, nums, h[80:], nil
}

// mustWrite is 1 when every function call must write (see A in
// scripts.go): when WAIT follows it (Options.WaitReplicas), which counts
// only writes.
func (s *Store) mustWrite() int64 {
	if s.batch.wait > 0 {
		return 1
	}
	return 0
}

// run runs script with the scope's keys, one argument packing the
// worker's knowledge of the scope and then args (see packer), and more
// arguments, and returns the reply after its head {epoch, version, spent,
// held, calls}, with the balance.
func (s *Store) run(ctx context.Context, script *script, args packer, more ...any) (reply, agent.Balance, error) {
	s.mu.Lock()
	p := make(packer, 0, 40+len(s.epoch)+len(s.fresh)+len(args))
	p = p.str(s.epoch).num(s.seen).str(s.fresh).num(s.mustWrite())
	s.mu.Unlock()
	argv := append(make([]any, 0, 1+len(more)), string(append(p, args...)))
	var rep reply
	v, err := s.exec(ctx, script, append(argv, more...)).Result()
	if err != nil {
		return rep, agent.Balance{}, scriptError(err)
	}
	if a, ok := v.([]any); ok && len(a) > 0 {
		v, rep.rest = a[0], a[1:]
	}
	h, _ := v.(string)
	epoch, nums, tail, err := decodeHead(h)
	if err != nil {
		return rep, agent.Balance{}, err
	}
	ver := nums[0]
	if epoch == "" || ver < 0 {
		return rep, agent.Balance{}, fmt.Errorf("redisledger: scope version %v, epoch %q", ver, epoch)
	}
	copy(rep.x[:], nums[6:])
	rep.tail = tail
	s.mu.Lock()
	if s.epoch != "" && s.epoch != epoch || ver < s.seen {
		// Another call of this worker saw a newer scope in the meantime;
		// the scripts check that on the next call.
		ver = s.seen
	}
	s.epoch, s.seen = epoch, max(s.seen, ver)
	s.mu.Unlock()
	bal, err := balance([]any{nums[1], nums[2], nums[3], nums[4], nums[5]})
	return rep, bal, err
}

// scriptError maps the scripts' errors to the agent package's.
func scriptError(err error) error {
	if !isScriptError(err) {
		return err
	}
	switch msg := err.Error(); {
	case strings.Contains(msg, "redisledger: state lost:"):
		return fmt.Errorf("%w: %s", agent.ErrStoreStateLost, msg[strings.Index(msg, "redisledger: state lost:")+len("redisledger: state lost: "):])
	case strings.Contains(msg, "redisledger: reservation ended:"):
		return fmt.Errorf("%w: %s", agent.ErrReservationEnded, msg)
	}
	return err
}

// Append records e in the scope's history, stamped with Redis's clock.
func (s *Store) Append(ctx context.Context, e agent.Entry) error {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	enc := encodeEntry(e)
	args := packer{}.str(enc[0]).num(preflight.MaxHistory).num(ms(s.idle)).str(bucket(e.Fingerprint)).str(enc[1]).str(enc[2]).str(enc[3]).str(enc[4])
	if _, _, err := s.run(ctx, appendScript, args); err != nil {
		return fmt.Errorf("redisledger: append: %w", err)
	}
	return nil
}

// State returns the scope's history, Redis's clock and the balance.
func (s *Store) State(ctx context.Context) (agent.LedgerState, error) {
	return s.state(ctx, "*", "")
}

// StateOf returns the scope's balance, Redis's clock and the history
// entries of fingerprint, read through the scope's index of entries by
// fingerprint: its cost does not grow with the rest of the history.
func (s *Store) StateOf(ctx context.Context, fingerprint string) (agent.LedgerState, error) {
	return s.state(ctx, readBucket(fingerprint), fingerprint)
}

// state reads the balance and the entries of bucket b ("*": every
// entry), keeping those of fingerprint fp (every one for "*").
func (s *Store) state(ctx context.Context, b, fp string) (agent.LedgerState, error) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	v, bal, err := s.run(ctx, stateScript, packer{}.str(b).num(ms(s.keep)).num(ms(s.idle)))
	if err != nil {
		return agent.LedgerState{}, fmt.Errorf("redisledger: state: %w", err)
	}
	if len(v.rest) < 1 {
		return agent.LedgerState{}, errors.New("redisledger: state: no clock from the script")
	}
	st := agent.LedgerState{Balance: bal}
	if st.Now, st.History, err = entriesOf(v.rest[0], v.rest[1:], fp, b == "*"); err != nil {
		return agent.LedgerState{}, fmt.Errorf("redisledger: state: %w", err)
	}
	return st, nil
}

// entriesOf reads the clock (ms, an integer) and the history entries a script returned:
// buckets, each of lines holding an eviction class (one digit) and an
// entry's JSON. It keeps the entries of fingerprint fp (a bucket may hold
// other fingerprints' too), or, with all, every entry, in the order they
// were recorded.
func entriesOf(clock any, buckets []any, fp string, all bool) (time.Time, []agent.StoredEntry, error) {
	now, ok := clock.(int64)
	if !ok {
		return time.Time{}, nil, fmt.Errorf("clock %v", clock)
	}
	var h []agent.StoredEntry
	var ns []int64
	for _, b := range buckets {
		str, _ := b.(string)
		for len(str) > 0 {
			line, rest, _ := strings.Cut(str, "\n")
			str = rest
			var e storedEntry
			if len(line) < 2 || json.Unmarshal([]byte(line[1:]), &e) != nil {
				return time.Time{}, nil, fmt.Errorf("%w: history entry %q is damaged", agent.ErrStoreStateLost, line)
			}
			if !all && e.FP != fp {
				continue
			}
			at, _ := strconv.ParseInt(e.At, 10, 64)
			h = append(h, agent.StoredEntry{At: time.UnixMilli(at), Entry: agent.Entry{
				ToolCallID: e.ID, Fingerprint: e.FP, Outcome: preflight.Outcome(e.O), ResultReference: e.Ref, GoalHash: e.Goal,
			}})
			ns = append(ns, e.N)
		}
	}
	if all {
		sort.Sort(byNumber{h, ns})
	}
	if h == nil {
		h = []agent.StoredEntry{}
	}
	return time.UnixMilli(now), h, nil
}

// byNumber sorts entries by their numbers in the scope: the order they
// were recorded.
type byNumber struct {
	h  []agent.StoredEntry
	ns []int64
}

func (b byNumber) Len() int           { return len(b.h) }
func (b byNumber) Less(i, j int) bool { return b.ns[i] < b.ns[j] }
func (b byNumber) Swap(i, j int) {
	b.h[i], b.h[j] = b.h[j], b.h[i]
	b.ns[i], b.ns[j] = b.ns[j], b.ns[i]
}

// balance reads {spent (two limbs), held (two limbs), calls} as the
// scripts return them.
func balance(v []any) (agent.Balance, error) {
	spent, err := fromLimbs(v[0], v[1])
	if err != nil {
		return agent.Balance{}, err
	}
	held, err := fromLimbs(v[2], v[3])
	if err != nil {
		return agent.Balance{}, err
	}
	calls, err := limbInt(v[4])
	if err != nil {
		return agent.Balance{}, fmt.Errorf("redisledger: call count %v in Redis", v[4])
	}
	return agent.Balance{SpentUSD: spent, ReservedUSD: held, Calls: int(calls)}, nil
}

// Reserve holds r.AmountUSD and one call, atomically in Redis, if the
// scope's limits hold, with a lease this process renews until Settle or
// Release. An amount with more than MaxFractionDigits fraction digits is
// held rounded up to the next attodollar; a limit with more is refused
// with an error wrapping ErrPrecision (see [Store.CheckLimit]). An amount
// of 10^12 USD or more is refused with ErrRange without a limit, and not
// held (more than any limit) with one. A retry of
// a reservation Redis holds (go-redis retries a command whose connection
// broke) holds nothing more and returns true.
//
// When Reserve returns an error from Redis, the hold may have been made
// and only its reply lost (the deadline passed first, or the connection
// broke): Reserve then releases it in the background, for up to 1 s, so
// that its money is given back at once rather than a lease later; Reserve
// itself returns at once. A reservation whose context ended while it was
// still queued to be pipelined (see Options.NoPipelining) was never sent:
// there is nothing to release. The call it counted stays counted, as for any
// release.
func (s *Store) Reserve(ctx context.Context, r agent.Reservation) (bool, agent.Balance, error) {
	ok, st, err := s.reserve(ctx, r, "")
	return ok, st.Balance, err
}

// ReserveOf is Reserve, reading in the same script the balance, Redis's
// clock and the history entries of fingerprint: one round trip.
func (s *Store) ReserveOf(ctx context.Context, r agent.Reservation, fingerprint string) (bool, agent.LedgerState, error) {
	return s.reserve(ctx, r, fingerprint)
}

func (s *Store) reserve(ctx context.Context, r agent.Reservation, fp string) (bool, agent.LedgerState, error) {
	var st agent.LedgerState
	a1, a0, err := limbsOf(r.AmountUSD, false)
	if err != nil && !errors.Is(err, ErrRange) {
		return false, st, err
	}
	l1, l0 := "", ""
	if r.LimitUSD != "" {
		var lerr error
		if l1, l0, lerr = limbsOf(r.LimitUSD, true); lerr != nil {
			return false, st, lerr
		}
	}
	if err != nil {
		if l1 == "" {
			return false, st, err
		}
		// Past the range, the amount is more than any limit: the script
		// refuses it as over the limit.
		a1, a0 = strconv.Itoa(maxLimbHi), "0"
	}
	if r.ID == "" {
		return false, st, errors.New("redisledger: reservation without an id")
	}
	lease := r.Lease
	if lease <= 0 {
		lease = s.lease
	}
	if err := s.CheckLease(lease); err != nil {
		return false, st, err
	}
	started := int64(0)
	if r.Started {
		started = 1
	}
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	// Registered before the script runs, so that the renewer covers the
	// hold from the moment it exists.
	s.keeper.Hold(r.ID, lease)
	tk := token(r.ID)
	fb := ""
	if b := readBucket(fp); b != "" {
		fb = "f:" + b
	}
	args := packer{}.str(tk).str(shard(tk)).limb(a1).limb(a0).limb(l1).limb(l0).num(int64(r.MaxCalls)).num(ms(lease)).num(ms(s.idle)).num(started).num(ms(s.keep)).str(fb)
	v, bal, err := s.run(ctx, reserveScript, args)
	if err != nil {
		s.keeper.Drop(r.ID)
		if !isScriptError(err) && !errors.Is(err, agent.ErrStoreStateLost) && !errors.Is(err, agent.ErrReservationEnded) && !errors.Is(err, errNotSent) {
			go s.releaseLost(r.ID)
		}
		return false, st, fmt.Errorf("redisledger: reserve: %w", err)
	}
	ok := v.x[0] == 1
	if !ok {
		s.keeper.Drop(r.ID)
	}
	st.Balance = bal
	if st.Now, st.History, err = entriesOf(v.x[1], []any{v.tail}, fp, false); err != nil {
		return ok, st, fmt.Errorf("redisledger: reserve: %w", err)
	}
	return ok, st, nil
}

// Cancel withdraws reservation id: its hold is freed and its call no
// longer counts.
func (s *Store) Cancel(ctx context.Context, id string) error {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	err := retry(ctx, func() error {
		tk := token(id)
		_, _, err := s.run(ctx, cancelScript, packer{}.str(tk).str(shard(tk)).num(ms(s.idle)).num(ms(s.keep)))
		return err
	})
	s.keeper.Drop(id)
	if err != nil {
		return fmt.Errorf("redisledger: cancel %s: %w", id, err)
	}
	return nil
}

// lostReleaseTimeout bounds releaseLost.
const lostReleaseTimeout = time.Second

// releaseLost gives back reservation id after Reserve failed without an
// answer from the script: Redis may have made the hold and its reply been
// lost, and the caller will not run the call. For an id Redis does not
// hold it does nothing; if it fails too, the hold lapses when its lease
// runs out (and, started, is charged: never spent twice).
func (s *Store) releaseLost(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), lostReleaseTimeout)
	defer cancel()
	tk := token(id)
	_, _, _ = s.run(ctx, releaseScript, packer{}.str(tk).str(shard(tk)).num(ms(s.idle)).num(ms(s.keep)))
}

// CheckLease returns an error when a reservation lease is longer than
// Options.IdleTTL: the scope's keys could then expire while the lease
// still holds money. Reserve refuses such a lease; agent.NewGuard calls
// CheckLease on GuardOptions.Lease, so that it is refused when the Guard
// is built, not reported on every call as an unavailable store.
func (s *Store) CheckLease(lease time.Duration) error {
	if s.idle > 0 && lease > s.idle {
		return fmt.Errorf("redisledger: reservation lease %v is longer than Options.IdleTTL (%v): the scope's keys could expire while the lease still holds money; make the lease (GuardOptions.Lease) at most IdleTTL", lease, s.idle)
	}
	return nil
}

// CheckLimit returns an error wrapping ErrPrecision when limitUSD, a
// budget, has more than MaxFractionDigits fraction digits, one wrapping
// ErrRange when it is 10^12 USD or more, and an error when it is not a
// non-negative decimal: the limits Reserve refuses.
// agent.NewGuard calls it on GuardOptions.BudgetUSD, so that such a budget
// is refused when the Guard is built.
func (s *Store) CheckLimit(limitUSD json.Number) error {
	_, _, err := limbsOf(limitUSD, true)
	return err
}

// Settle ends reservation id, counting costUSD as spent and recording
// record (when non-nil) in one atomic step. A cost with more than
// MaxFractionDigits fraction digits is counted rounded up to the next
// attodollar; one of 10^12 USD or more is refused with ErrRange. Settle is idempotent: while Redis is unreachable it retries
// (within ctx and Options.SettleTimeout), keeping the lease renewed, and
// a copy that Redis had already applied is answered with the first
// outcome, not reported as a Duplicate; a Settle of an id settled by
// another call is. When it gives up, it returns an error: the cost is not
// counted, and the hold, no longer renewed, is charged when its lease runs
// out. This process stops renewing the lease when Settle returns,
// whatever it returns.
func (s *Store) Settle(ctx context.Context, id string, costUSD json.Number, record *agent.Entry) (agent.Settlement, error) {
	defer s.keeper.Drop(id)
	c1, c0, err := limbsOf(costUSD, false)
	if err != nil {
		return agent.Settlement{}, err
	}
	var enc [5]string
	b := ""
	if record != nil {
		enc, b = encodeEntry(*record), bucket(record.Fingerprint)
	}
	tk := token(id)
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	nonce := hex.EncodeToString(raw[:])
	ctx, cancel := context.WithTimeout(ctx, s.settle)
	defer cancel()
	var v reply
	var bal agent.Balance
	err = retry(ctx, func() error {
		var err error
		args := packer{}.str(tk).str(shard(tk)).limb(c1).limb(c0).num(ms(s.keep)).str(enc[0]).num(preflight.MaxHistory).num(ms(s.idle)).str(nonce).str(b).str(enc[1]).str(enc[2]).str(enc[3]).str(enc[4])
		v, bal, err = s.run(ctx, settleScript, args)
		return err
	})
	if err != nil {
		return agent.Settlement{}, fmt.Errorf("redisledger: settle %s: %w", id, err)
	}
	counted, err := fromLimbs(v.x[2], v.x[3])
	return agent.Settlement{Duplicate: v.x[0] == 2, Late: v.x[1] == 1, CostUSD: counted, Balance: bal}, err
}

// Release frees reservation id without spending.
func (s *Store) Release(ctx context.Context, id string) error {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	err := retry(ctx, func() error {
		tk := token(id)
		_, _, err := s.run(ctx, releaseScript, packer{}.str(tk).str(shard(tk)).num(ms(s.idle)).num(ms(s.keep)))
		return err
	})
	s.keeper.Drop(id) // on failure the lease expires
	if err != nil {
		return fmt.Errorf("redisledger: release %s: %w", id, err)
	}
	return nil
}

// retry runs f until it succeeds, returns a script error (which a retry
// would repeat), or ctx ends. A call that failed with ErrNotReplicated is
// retried too: the retry writes again (see Options.WaitReplicas), after
// the first copy in the primary's replication stream, so a WAIT that
// covers it covers the first copy as well; and if a failover lost the
// first copy, the retry is the one that counts.
func retry(ctx context.Context, f func() error) error {
	wait := 20 * time.Millisecond
	for {
		err := f()
		if err == nil || isScriptError(err) || errors.Is(err, agent.ErrStoreStateLost) || errors.Is(err, agent.ErrReservationEnded) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// isScriptError reports whether err came from a script that ran and
// failed, as opposed to a connection or a node that was not there.
func isScriptError(err error) bool {
	var re redis.Error
	return err != nil && errors.As(err, &re) && strings.Contains(err.Error(), "redisledger:")
}

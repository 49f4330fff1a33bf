package redisledger

import "github.com/redis/go-redis/v9"

// The scripts run atomically on the Redis node that owns the scope's slot.
// Each one first checks that the scope is the one this worker knows (see
// "State loss" in the package doc), then gives back or charges the holds
// whose lease expired ("reaping"), so that no reader ever sees an expired
// hold, without a background process.
//
// A scope is one hash (layout 2). Redis drops, evicts and expires whole
// keys, never single fields: a scope is there whole or not at all, and a
// missing scope is seen by the epoch every worker carries.
//
// A script reads the fields it needs in one HMGET (the scope's own and
// those the client names: the reservation's record, its lease shard, the
// history bucket of its fingerprint, the eviction queues), keeps its
// changes in a table and writes them at its end with one HSET: a call
// that runs is two scripts of three or four Redis commands each (HMGET,
// TIME, HSET; a settlement that evicts an entry reads the victim's
// bucket too), and, Redis 7 replicating scripts by their effects, one
// write each to the AOF. No field grows with the history or the number
// of calls: the history is at most MaxHistory entries in at most 1,024
// buckets, a lease shard lists the calls in flight whose id hashes to
// it.
//
// Money is an integer count of attodollars (10^-18 USD) held as two
// integer limbs (see toLimbs): Lua's numbers are doubles, exact only up to
// 2^53, which 18 fraction digits would exceed at 0.009 USD.
//
// KEYS: 1 the scope (hash); 2 and 3 the two sorted sets of layout 1
// (read only when a scope is created: a scope of the older layout whose
// hash vanished is lost, not new).
//
// Fields of the scope hash (a reservation is named by its token, see
// token in store.go: its id, or "~" and its hex when the id has bytes
// other than [A-Za-z0-9._:-]):
//
//	epoch  id of this incarnation of the scope, chosen by its creator
//	c      the scope's counters, 13 little-endian doubles: ver, the write counter
//	       (+1 on every change of money or history); spent and held (two
//	       limbs each); calls; seq (last entry number); n (entries); lx,
//	       a time (ms) before which no lease expires (reaping reads the
//	       leases only from then on); t, when the key's expiry was last
//	       extended; xo and xn, the ended-reservation queue (fields
//	       x:<xo>..x:<xn-1>); xt, the end time of x:<xo> (0: unknown)
//	lost   why the scope was found lost; once set, every script fails
//	retired the epochs the scope had before an operator recovered it
//	       (Store.Recover), space-separated: a worker that knows one is
//	       refused without marking the scope lost again
//	r:<tk> a reservation: held "h <amount limbs> <started 0|1> <lease
//	       expiry ms>", or ended "<state> <cost limbs> <end ms> <nonce>",
//	       state 0 settled, 1 settled late, 3 released, 4 charged at
//	       lease expiry (cost is the amount charged)
//	H<s>   the tokens of the reservations held whose token hashes to
//	       shard s (0..15), space-separated: what reaping reads
//	x:<k>  the k-th ended reservation: "<end ms> <token>", oldest first,
//	       dropped with its record after Options.SettledRetention
//	f:<b>  the history entries whose fingerprint hashes to bucket b
//	       (0..1023), oldest first, one a line: the entry's eviction
//	       class (a digit) then its JSON, with its time (at) and number (n)
//	q0..q3 the bucket of each entry of each eviction class, oldest first,
//	       space-separated: the k-th occurrence of b in q<c> is the k-th
//	       entry of class c in f:<b>
//
// ARGV 1..3 of every script: the epoch the worker knows ("" for none), the
// highest ver it has seen, the epoch to create the scope with. Every reply
// starts {epoch, ver, spent (limbs), held (limbs), calls}.
const prelude = `
-- The call's keys and common arguments (see init).
local KS, S, known, seen, fresh

-- Money is a pair of limbs h, l worth h*10^15 + l attodollars, each an
-- integer below 2^53 (see toLimbs in money.go).
local B, HMAX = 1e15, 4503599627370496

-- add returns a + b; past the ledger's range it fails the script.
local function add(ah, al, bh, bl)
  local h, l = ah + bh, al + bl
  if l >= B then h, l = h + 1, l - B end
  if h >= HMAX then error('redisledger: a total would pass the ledger\'s range (4.5e12 USD)') end
  return h, l
end

-- sub returns a - b, or nil when b > a (the state is inconsistent).
local function sub(ah, al, bh, bl)
  local h, l = ah - bh, al - bl
  if l < 0 then h, l = h - 1, l + B end
  if h < 0 then return nil end
  return h, l
end

-- le reports whether a <= b.
local function le(ah, al, bh, bl)
  return ah < bh or (ah == bh and al <= bl)
end

-- clock returns Redis's time in ms, as a number and as text.
local function clock()
  local t = redis.call('TIME')
  local ms = string.format('%03d', math.floor(tonumber(t[2]) / 1000))
  return tonumber(t[1]) * 1000 + tonumber(ms), t[1] .. ms
end

-- M is the scope's counters as this script reads and changes them; P the
-- fields it changed (false: deleted), written by save; C the fields read
-- for it (false: absent).
local M, P, C, changed, dirty

-- get reads field f as this script left it.
local function get(f)
  local v = P[f]
  if v == nil then v = C[f] end
  if v == nil then
    v = redis.call('HGET', S, f)
    C[f] = v
  end
  return v or nil
end

local function put(f, v) P[f] = v end

-- hmget reads the fields fs (any number) in as few HMGETs as unpack
-- allows.
local function hmget(fs)
  local out = {}
  for i = 1, #fs, 4000 do
    local v = redis.call('HMGET', S, unpack(fs, i, math.min(i + 3999, #fs)))
    for _, x in ipairs(v) do out[#out + 1] = x end
  end
  return out
end

-- retire notes the epoch this worker knows among those the scope had
-- before it was lost (field retired, space-separated), so that after an
-- operator's Recover the worker is refused without marking the scope
-- lost again.
local function retire(retired)
  if known == '' or string.find(' ' .. (retired or '') .. ' ', ' ' .. known .. ' ', 1, true) then return end
  local l = known
  if retired then l = retired .. ' ' .. known end
  redis.call('HSET', S, 'retired', l)
end

-- lose marks the scope lost, for every worker, and fails the script.
local function lose(why, idle)
  redis.call('HSET', S, 'lost', why)
  retire(redis.call('HGET', S, 'retired') or nil)
  if idle > 0 then redis.call('PEXPIRE', S, idle) end
  return redis.error_reply('redisledger: state lost: ' .. why)
end

local NONE = 1e15

-- The counters are 13 little-endian doubles (integers below 2^53, so
-- exact): struct converts them in C, ten times faster than parsing and
-- formatting decimal text in Lua.
local CF = '<ddddddddddddd'

local function unpackc(c)
  if not c or #c ~= 104 then return nil end
  local ver, s1, s0, h1, h0, calls, seq, n, lx, t, xo, xn, xt = struct.unpack(CF, c)
  return {ver = ver, s1 = s1, s0 = s0, h1 = h1, h0 = h0, calls = calls, seq = seq, n = n, lx = lx, t = t,
    xo = xo, xn = xn, xt = xt}
end

local function packc()
  return struct.pack(CF, M.ver, M.s1, M.s0, M.h1, M.h0, M.calls, M.seq, M.n, M.lx, M.t, M.xo, M.xn, M.xt)
end

local OLDER = 'redisledger: the scope was written by an older version of redisledger'

-- open checks the scope against what this worker knows and loads M; it
-- reads the fields in extra too, into C. It returns an error reply, or
-- nil. A scope that is not there is created (its writes made by save).
local function open(idle, extra)
  local v = redis.call('HMGET', S, 'epoch', 'c', 'lost', unpack(extra))
  if v[3] then
    retire(redis.call('HGET', S, 'retired') or nil)
    return redis.error_reply('redisledger: state lost: ' .. v[3])
  end
  for i, f in ipairs(extra) do C[f] = v[3 + i] end
  if not v[1] then
    if known ~= '' then
      return lose('the scope ' .. known .. ' vanished (Redis restarted without its data, evicted or expired it)', idle)
    end
    if v[2] then
      return lose('the epoch of the scope is missing', idle)
    end
    if redis.call('EXISTS', KS[2], KS[3]) > 0 then
      return lose('the scope hash is missing and its other keys are not', idle)
    end
    M = {ver = 0, s1 = 0, s0 = 0, h1 = 0, h0 = 0, calls = 0, seq = 0, n = 0, lx = NONE, t = 0, xo = 0, xn = 0, xt = 0}
    M.epoch = fresh
    put('epoch', fresh)
    dirty = true
    return nil
  end
  if not v[2] then
    local o = redis.call('HMGET', S, 'm', 'spent')
    if o[2] then
      return redis.error_reply(OLDER .. ', which kept money as decimal text: finish it with that version')
    end
    if o[1] then
      return redis.error_reply(OLDER .. ' (layout 1: three keys per scope): finish it with that version')
    end
  end
  M = unpackc(v[2])
  if not M then
    M = {}
    return lose('the counters of the scope are missing or damaged', idle)
  end
  M.epoch = v[1]
  if known ~= '' and v[1] ~= known then
    local retired = redis.call('HGET', S, 'retired')
    if retired and string.find(' ' .. retired .. ' ', ' ' .. known .. ' ', 1, true) then
      return redis.error_reply('redisledger: state lost: the scope ' .. known .. ' was lost and an operator recovered it as ' .. v[1] .. ': this worker used it before; restart it')
    end
    return lose('the scope ' .. known .. ' was replaced by ' .. v[1], idle)
  end
  if M.ver < seen then
    return lose('the scope went back to version ' .. M.ver .. ' after a worker saw version ' .. seen .. ' (Redis restarted from an older snapshot or lost writes)', idle)
  end
  return nil
end

-- save writes the script's changes: the fields in P and, when the money
-- or the history changed, the counters with the next version (or the
-- counters alone, when only lx, t or the ended queue changed: dirty).
-- When now is given and the key's expiry is due for extension (at most
-- every idle/16), it extends it: the scope expires between 15/16 of idle
-- and idle after its last write.
local function save(idle, now)
  local ext = false
  if idle > 0 and now and (changed or dirty) and now - M.t >= idle / 16 then
    M.t, dirty, ext = now, true, true
  end
  if changed then M.ver = M.ver + 1 end
  if changed or dirty then P.c = packc() end
  local set, del = {}, {}
  for f, v in pairs(P) do
    if v then set[#set + 1] = f; set[#set + 1] = v else del[#del + 1] = f end
  end
  if #set > 0 then redis.call('HSET', S, unpack(set)) end
  if #del > 0 then redis.call('HDEL', S, unpack(del)) end
  if ext then redis.call('PEXPIRE', S, idle) end
  P = {}
end

local function head(extra)
  local out = {M.epoch, M.ver, M.s1, M.s0, M.h1, M.h0, M.calls}
  if extra then for _, x in ipairs(extra) do out[#out + 1] = x end end
  return out
end

local function less(ah, al, bh, bl, what)
  local h, l = sub(ah, al, bh, bl)
  if not h then error('redisledger: state lost: ' .. what .. ' would be negative') end
  return h, l
end

-- unhold takes amount (limbs as text) off the money held.
local function unhold(ah, al)
  M.h1, M.h0 = less(M.h1, M.h0, tonumber(ah), tonumber(al), 'the money held')
end

-- uncharge takes a charge (limbs as text) off the money spent.
local function uncharge(ah, al)
  M.s1, M.s0 = less(M.s1, M.s0, tonumber(ah), tonumber(al), 'the money spent')
end

local function spend(ah, al)
  M.s1, M.s0 = add(M.s1, M.s0, tonumber(ah), tonumber(al))
end

-- held parses a reservation record: amount limbs, started, lease expiry
-- when it is a hold.
local function held(r)
  return string.match(r or '', '^h (%d+) (%d+) (%d) (%d+)$')
end

-- over parses an ended record: state, cost limbs, end time, nonce.
local function over(r)
  return string.match(r or '', '^(%d) (%d+) (%d+) (%d+) ?(.*)$')
end

-- ended records how reservation tk ended, for its retries, and queues it
-- for forgetting after the retention.
local function ended(tk, state, cost, nonce, nows)
  put('r:' .. tk, state .. ' ' .. cost .. ' ' .. nows .. ' ' .. nonce)
  put(string.format('x:%d', M.xn), nows .. ' ' .. tk)
  if M.xo == M.xn then M.xt = tonumber(nows) end
  M.xn = M.xn + 1
  dirty = true
end

-- unlist removes token tk from lease shard field h.
local function unlist(h, tk)
  local l = get(h) or ''
  -- an empty shard stays, empty: no HDEL (16 fields at most)
  if l == tk then put(h, ''); return end
  local i = string.find(' ' .. l .. ' ', ' ' .. tk .. ' ', 1, true)
  if not i then return end
  if i == 1 then put(h, string.sub(l, #tk + 2))
  else put(h, string.sub(l, 1, i - 2) .. string.sub(l, i + #tk)) end
end

local function list(h, tk)
  local l = get(h)
  if l and l ~= '' then l = l .. ' ' .. tk else l = tk end
  put(h, l)
end

-- lease notes that a lease runs until until_ms.
local function lease(until_ms)
  if until_ms < M.lx then
    M.lx = until_ms
    dirty = true
  end
end

-- reap gives back the holds whose lease expired by now, or charges them
-- when their call started (reading the lease shards only when one may
-- have expired: field lx), and forgets up to 16 ended reservations older
-- than keep_ms.
local function reap(now, nows, keep_ms)
  if now >= M.lx then
    local hs = {}
    for i = 0, 15 do hs[i + 1] = 'H' .. i end
    local ls = redis.call('HMGET', S, unpack(hs))
    local tks, rs, at = {}, {}, {}
    for i, l in ipairs(ls) do
      if l then
        if C[hs[i]] == nil then C[hs[i]] = l end
        for tk in string.gmatch(get(hs[i]) or '', '%S+') do
          tks[#tks + 1] = tk; rs[#rs + 1] = 'r:' .. tk; at[#at + 1] = hs[i]
        end
      end
    end
    local lx = NONE
    if #tks > 0 then
      local v = hmget(rs)
      for i, tk in ipairs(tks) do
        local a1, a0, st, exp = held(P[rs[i]] or v[i])
        if a1 and tonumber(exp) > now then
          lx = math.min(lx, tonumber(exp))
        elseif a1 then
          unhold(a1, a0)
          if st == '1' then
            spend(a1, a0)
            ended(tk, 4, a1 .. ' ' .. a0, '', nows)
          else
            put(rs[i], false)
          end
          unlist(at[i], tk)
          changed = true
        else
          -- not held (a record that ended or vanished): not a lease
          unlist(at[i], tk)
        end
      end
    end
    M.lx = lx
    dirty = true
  end
  if keep_ms > 0 and M.xo < M.xn and ((M.xt > 0 and now - keep_ms >= M.xt) or (M.xt == 0 and M.ver % 8 == 0)) then
    local fs = {}
    for k = M.xo, math.min(M.xo + 15, M.xn - 1) do fs[#fs + 1] = string.format('x:%d', k) end
    local xs = redis.call('HMGET', S, unpack(fs))
    local tks, ts = {}, {}
    M.xt = 0
    for i, x in ipairs(xs) do
      local t, tk = string.match(x or '', '^(%d+) (.+)$')
      if t and tonumber(t) > now - keep_ms then M.xt = tonumber(t); break end
      put(fs[i], false)
      M.xo = M.xo + 1
      if tk and P['r:' .. tk] == nil then tks[#tks + 1] = tk; ts[#ts + 1] = t end
    end
    dirty = true
    if #tks > 0 then
      local rs = {}
      for i, tk in ipairs(tks) do rs[i] = 'r:' .. tk end
      local v = redis.call('HMGET', S, unpack(rs))
      for i, r in ipairs(v) do
        local _, _, _, e = over(r)
        -- a record that ended again later is forgotten by its later entry
        if e == ts[i] then put(rs[i], false) end
      end
    end
  end
end

local function redundant(old, new)
  if old.fp ~= new.fp or old.o ~= new.o then return false end
  if new.o == 'success' then
    return old.goal == new.goal and (new.ref ~= '' or old.ref == '')
  end
  return new.o == 'transient_failure'
end

local function rank(e)
  if e.o == 'transient_failure' then return 0 end
  if e.o == 'success' and e.ref == '' then return 1 end
  if e.o == 'success' then return 2 end
  return 3
end

-- dropnth removes the j-th occurrence of bucket b from queue field q.
local function dropnth(q, b, j)
  local out, k = {}, 0
  for x in string.gmatch(get(q) or '', '%S+') do
    if x == b then
      k = k + 1
      if k ~= j then out[#out + 1] = x end
    else
      out[#out + 1] = x
    end
  end
  put(q, table.concat(out, ' '))
end

-- record appends the entry e ({fp, o, ref, goal}; raw its JSON without
-- the time) of bucket b, stamped now, under the retention rules of
-- agent.Ledger: drop the entries of its fingerprint it makes redundant,
-- then, while there are more than max, evict the oldest of the least
-- useful class other than itself. It reads the entries of its bucket and
-- the bucket of one evicted entry (its bucket and the queues come with
-- open).
local function record(raw, e, b, nows, max)
  local fb, cls = 'f:' .. b, rank(e)
  local lines = get(fb) or ''
  if lines ~= '' and string.find(lines, e.fp, 1, true) then
    local keep, gone, count = {}, {}, {0, 0, 0, 0}
    for line in string.gmatch(lines, '[^\n]+') do
      local c = tonumber(string.sub(line, 1, 1))
      count[c + 1] = count[c + 1] + 1
      if string.find(line, e.fp, 1, true) and redundant(cjson.decode(string.sub(line, 2)), e) then
        gone[#gone + 1] = {c, count[c + 1]}
        M.n = M.n - 1
      else
        keep[#keep + 1] = line
      end
    end
    if #gone > 0 then
      lines = table.concat(keep, '\n')
      for i = #gone, 1, -1 do dropnth('q' .. gone[i][1], b, gone[i][2]) end
    end
  end
  M.seq = M.seq + 1
  local line = cls .. string.sub(raw, 1, -2) .. ',"at":"' .. nows .. string.format('","n":%d}', M.seq)
  if lines == '' then lines = line else lines = lines .. '\n' .. line end
  put(fb, lines)
  local q = get('q' .. cls)
  if q and q ~= '' then put('q' .. cls, q .. ' ' .. b) else put('q' .. cls, b) end
  M.n = M.n + 1
  while M.n > max do
    local victim, vc
    for r = 0, 3 do
      local q = get('q' .. r)
      if q and q ~= '' and (r ~= cls or string.find(q, ' ', 1, true)) then
        victim, vc = string.match(q, '^%S+'), r
        break
      end
    end
    if not victim then break end
    local q = get('q' .. vc)
    local sp = string.find(q, ' ', 1, true)
    if sp then put('q' .. vc, string.sub(q, sp + 1)) else put('q' .. vc, '') end
    -- the first line of class vc in the victim's bucket
    local fv = 'f:' .. victim
    local l = '\n' .. (get(fv) or '') .. '\n'
    local i = string.find(l, '\n' .. string.char(48 + vc), 1, true)
    if i then
      local j = string.find(l, '\n', i + 1, true)
      put(fv, string.sub(string.sub(l, 1, i) .. string.sub(l, j + 1), 2, -2))
    end
    M.n = M.n - 1
  end
  changed = true
end

-- init starts a call: its keys and arguments, nothing read or changed.
local function init(keys, args)
  KS, S = keys, keys[1]
  known, seen, fresh = args[1], tonumber(args[2]), args[3]
  M, P, C, changed, dirty = {}, {}, {}, false, false
end
`

// reserveScript: ARGV 4.. token, lease shard, amount (two limbs), limit
// (two limbs, "" for none), max calls (0 for none), lease ms, idle ms,
// started (0|1), keep ms, the fingerprint's bucket ("" for none). Reply:
// head, then 1 when held (or already held), 0 when the limits do not
// hold, the clock in ms, then the lines of the bucket (one string, "" for
// none).
var reserveScript = newScript("reserve", `
local tk, sh, a1, a0, max_calls, lease_ms, idle = ARGV[4], 'H' .. ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local fb = ''
local extra = {'r:' .. tk, sh}
if ARGV[15] ~= '' then fb = 'f:' .. ARGV[15]; extra[3] = fb end
local bad = open(idle, extra)
if bad then return bad end
local now, nows = clock()
reap(now, nows, tonumber(ARGV[14]))
local function reply(ok)
  local b = ''
  if fb ~= '' then b = get(fb) or '' end
  return head({ok, nows, b})
end
local r = get('r:' .. tk)
if held(r) then
  save(idle, now)
  return reply(1)
end
if r then
  save(idle, now)
  return redis.error_reply('redisledger: reservation ended: ' .. tk)
end
local t1, t0 = add(M.s1, M.s0, M.h1, M.h0)
t1, t0 = add(t1, t0, a1, a0)
if ((a1 > 0 or a0 > 0) and ARGV[8] ~= '' and not le(t1, t0, tonumber(ARGV[8]), tonumber(ARGV[9])))
  or (max_calls > 0 and M.calls + 1 > max_calls) then
  save(idle, now)
  return reply(0)
end
M.h1, M.h0 = add(M.h1, M.h0, a1, a0)
M.calls = M.calls + 1
local exp = now + lease_ms
put('r:' .. tk, 'h ' .. ARGV[6] .. ' ' .. ARGV[7] .. ' ' .. ARGV[13] .. ' ' .. string.format('%d', exp))
list(sh, tk)
lease(exp)
changed = true
save(idle, now)
return reply(1)
`)

// cancelScript: ARGV 4.. token, lease shard, idle ms, keep ms. Withdraws
// the hold and its call; gives back a charge made at lease expiry. Reply:
// head.
var cancelScript = newScript("cancel", `
local tk, sh, idle = ARGV[4], 'H' .. ARGV[5], tonumber(ARGV[6])
local bad = open(idle, {'r:' .. tk, sh})
if bad then return bad end
local now, nows = clock()
reap(now, nows, tonumber(ARGV[7]))
local r = get('r:' .. tk)
local a1, a0 = held(r)
if a1 then
  unhold(a1, a0)
  M.calls = M.calls - 1
  unlist(sh, tk)
  ended(tk, 3, '0 0', '', nows)
  changed = true
else
  local st, c1, c0 = over(r)
  if st == '4' then
    uncharge(c1, c0)
    M.calls = M.calls - 1
    ended(tk, 3, '0 0', '', nows)
    changed = true
  end
end
save(idle, now)
return head()
`)

// settleScript: ARGV 4.. token, lease shard, cost (two limbs), keep ms,
// entry JSON ("" for none), max entries, idle ms, nonce, the entry's
// bucket, fingerprint, outcome, result reference and goal hash (as in its
// JSON). Reply: head, then state (0 settled, 1 settled late, 2 repeat of
// an earlier settlement), late (0|1), cost counted (two limbs).
var settleScript = newScript("settle", `
local tk, sh, nonce, idle = ARGV[4], 'H' .. ARGV[5], ARGV[12], tonumber(ARGV[11])
local extra = {'r:' .. tk, sh}
if ARGV[9] ~= '' then
  for _, f in ipairs({'f:' .. ARGV[13], 'q0', 'q1', 'q2', 'q3'}) do extra[#extra + 1] = f end
end
local bad = open(idle, extra)
if bad then return bad end
local now, nows = clock()
reap(now, nows, tonumber(ARGV[8]))
local r = get('r:' .. tk)
local late = 1
local a1, a0 = held(r)
if a1 then
  unhold(a1, a0)
  unlist(sh, tk)
  late = 0
elseif r then
  local st, c1, c0, _, n = over(r)
  if st == '0' or st == '1' then
    save(idle, now)
    if n == nonce then return head({tonumber(st), tonumber(st), c1, c0}) end
    return head({2, tonumber(st), c1, c0})
  end
  if st == '4' then uncharge(c1, c0) end
end
spend(ARGV[6], ARGV[7])
ended(tk, late, ARGV[6] .. ' ' .. ARGV[7], nonce, nows)
if ARGV[9] ~= '' then record(ARGV[9], {fp = ARGV[14], o = ARGV[15], ref = ARGV[16], goal = ARGV[17]}, ARGV[13], nows, tonumber(ARGV[10])) end
changed = true
save(idle, now)
return head({late, late, ARGV[6], ARGV[7]})
`)

// releaseScript: ARGV 4.. token, lease shard, idle ms, keep ms. Frees the
// hold without spending; gives back a charge made at lease expiry.
// Reply: head.
var releaseScript = newScript("release", `
local tk, sh, idle = ARGV[4], 'H' .. ARGV[5], tonumber(ARGV[6])
local bad = open(idle, {'r:' .. tk, sh})
if bad then return bad end
local now, nows = clock()
reap(now, nows, tonumber(ARGV[7]))
local r = get('r:' .. tk)
local a1, a0 = held(r)
if a1 then
  unhold(a1, a0)
  unlist(sh, tk)
  ended(tk, 3, '0 0', '', nows)
  changed = true
else
  local st, c1, c0 = over(r)
  if st == '4' then
    uncharge(c1, c0)
    ended(tk, 3, '0 0', '', nows)
    changed = true
  end
end
save(idle, now)
return head()
`)

// renewScript: ARGV 4.. lease ms, idle ms, keep ms, then reservation
// tokens. Extends the leases of those still held and, when there was
// one, the expiry of the scope's key. Reply: head, then how many were
// held.
var renewScript = newScript("renew", `
local idle = tonumber(ARGV[5])
local extra = {}
for i = 7, #ARGV do extra[#extra + 1] = 'r:' .. ARGV[i] end
local bad = open(idle, extra)
if bad then return bad end
local now, nows = clock()
reap(now, nows, tonumber(ARGV[6]))
local until_ms, n = now + tonumber(ARGV[4]), 0
for i = 7, #ARGV do
  local a1, a0, st = held(get('r:' .. ARGV[i]))
  if a1 then
    put('r:' .. ARGV[i], 'h ' .. a1 .. ' ' .. a0 .. ' ' .. st .. ' ' .. string.format('%d', until_ms))
    n = n + 1
  end
end
if n > 0 then
  lease(until_ms)
  -- a renewal is a write: it keeps the scope alive while a call runs
  dirty = true
end
save(idle, now)
return head({n})
`)

// appendScript: ARGV 4.. entry JSON, max entries, idle ms, the entry's
// bucket, fingerprint, outcome, result reference and goal hash. Reply:
// head.
var appendScript = newScript("append", `
local idle = tonumber(ARGV[6])
local bad = open(idle, {'f:' .. ARGV[7], 'q0', 'q1', 'q2', 'q3'})
if bad then return bad end
local now, nows = clock()
record(ARGV[4], {fp = ARGV[8], o = ARGV[9], ref = ARGV[10], goal = ARGV[11]}, ARGV[7], nows, tonumber(ARGV[5]))
save(idle, now)
return head()
`)

// stateScript: ARGV 4.. what: a bucket, "" for none, "*" for every
// entry; keep ms, idle ms. Reply: head, now ms, then the lines of the
// bucket, or of every bucket of the history (one string each).
var stateScript = newScript("state", `
local extra = {}
if ARGV[4] == '*' then extra = {'q0', 'q1', 'q2', 'q3'} elseif ARGV[4] ~= '' then extra = {'f:' .. ARGV[4]} end
local idle = tonumber(ARGV[6])
local bad = open(idle, extra)
if bad then return bad end
local now, nows = clock()
reap(now, nows, tonumber(ARGV[5]))
save(idle, now)
local out = head({nows})
if ARGV[4] ~= '*' then
  if ARGV[4] ~= '' then out[#out + 1] = get('f:' .. ARGV[4]) or '' end
  return out
end
local seen, fs = {}, {}
for r = 0, 3 do
  for b in string.gmatch(get('q' .. r) or '', '%S+') do
    if not seen[b] then seen[b] = true; fs[#fs + 1] = 'f:' .. b end
  end
end
if #fs > 0 then
  for _, l in ipairs(hmget(fs)) do out[#out + 1] = l or '' end
end
return out
`)

// recoverScript: ARGV 1.. the new epoch, spent (two limbs), idle ms.
// It does not run the prelude's checks: it repairs what they refuse. It
// fails unless the scope is marked lost; otherwise it gives the scope the
// new epoch and the spending given, drops every hold and lease, keeps the
// call count, history and ended ids that are left, and clears the mark.
// The epochs workers knew before (the old one, and those the workers that
// found the loss knew: field retired) are kept, so that such a worker is
// refused without marking the scope lost again. Reply: {epoch, ver}.
var recoverScript = redis.NewScript(`
local S = KEYS[1]
local epoch, idle = ARGV[1], tonumber(ARGV[4])
local why = redis.call('HGET', S, 'lost')
if not why then
  return redis.error_reply('redisledger: recover: the scope is not marked lost')
end
local hs = {}
for i = 0, 15 do hs[i + 1] = 'H' .. i end
local drop = {}
for _, l in ipairs(redis.call('HMGET', S, unpack(hs))) do
  for tk in string.gmatch(l or '', '%S+') do
    local r = redis.call('HGET', S, 'r:' .. tk)
    if r and string.sub(r, 1, 2) == 'h ' then drop[#drop + 1] = 'r:' .. tk end
  end
end
for _, h in ipairs(hs) do drop[#drop + 1] = h end
for i = 1, #drop, 1000 do
  redis.call('HDEL', S, unpack(drop, i, math.min(i + 999, #drop)))
end
local v = redis.call('HMGET', S, 'c', 'epoch', 'retired', 'm')
if not v[1] and v[4] then
  return redis.error_reply('redisledger: recover: the scope was written by an older version of redisledger (layout 1): recover it with that version')
end
local ver, calls, seq, n, xo, xn, xt = 0, 0, 0, 0, 0, 0, 0
if v[1] and #v[1] == 104 then
  local c = {struct.unpack('<ddddddddddddd', v[1])}
  ver, calls, seq, n, xo, xn, xt = c[1], c[6], c[7], c[8], c[11], c[12], c[13]
end
ver = ver + 1
local retired = v[3]
if v[2] then
  if retired then retired = retired .. ' ' .. v[2] else retired = v[2] end
end
if retired then
  -- the last 16 epochs are enough: older workers were long stopped
  local all = {}
  for e in string.gmatch(retired, '%S+') do all[#all + 1] = e end
  retired = table.concat(all, ' ', math.max(1, #all - 15))
  redis.call('HSET', S, 'retired', retired)
end
redis.call('HDEL', S, 'lost', 'spent', 'held')
redis.call('HSET', S, 'epoch', epoch, 'c', struct.pack('<ddddddddddddd', ver, tonumber(ARGV[2]), tonumber(ARGV[3]), 0, 0, calls, seq, n, 1e15, 0, xo, xn, xt))
if idle > 0 then redis.call('PEXPIRE', S, idle) end
return {epoch, ver}
`)

package redisledger

import "github.com/redis/go-redis/v9"

// The scripts run atomically on the Redis node that owns the scope's slot:
// every key they touch carries the scope's hash tag. Each one first checks
// that the scope is the one this worker knows (see "State loss" in the
// package doc), then gives back or charges the holds whose lease expired
// ("reaping"), so that no reader ever sees an expired hold, without a
// background process.
//
// Money is an integer count of attodollars (10^-18 USD) held as two
// integer limbs (see toLimbs): Lua's numbers are doubles, exact only up to
// 2^53, which 18 fraction digits would exceed at 0.009 USD.
//
// Each script reads every field of the scope hash it may need in one HMGET
// (the scope's own fields and those the client named: the hold and end of
// its reservation, the index lists of its fingerprint and of the eviction
// classes), keeps its changes in a table, and writes them at its end with
// one HSET and one HDEL: its cost stays a few Redis commands.
//
// KEYS: 1 the scope (hash), 2 leases (sorted set: hold id by lease expiry
// in ms), 3 ended (sorted set: ended reservation id by end time in ms).
// Both sorted sets hold the member "!" with score +inf from the scope's
// creation: a set without it lost its contents.
//
// Fields of the scope hash:
//
//	epoch  id of this incarnation of the scope, chosen by its creator
//	m      the scope's counters, space-separated (one field: one string
//	       to parse and to write per script): ver, the write counter (+1
//	       on every change of money or history); spent and held (two
//	       limbs each); calls; seq (last entry number); n (entries); lx,
//	       a time (ms) before which no lease expires: reaping looks at
//	       the leases only from then on
//	t      when the keys' expiry was last extended (ms)
//	lost   why the scope was found lost; once set, every script fails
//	retired the epochs the scope had before an operator recovered it
//	       (Store.Recover), space-separated: a worker that knows one is
//	       refused without marking the scope lost again
//	h:<id> a hold: "<amount limbs> <started 0|1>"
//	d:<id> an ended reservation: "<state> <cost limbs> <nonce>", state 0
//	       settled, 1 settled late, 3 released, 4 charged at lease
//	       expiry (cost is the amount charged)
//	e:<n>  history entry number n (JSON)
//	f:<fp> the entry numbers of fingerprint fp, oldest first
//	q0..q3 the entry numbers of each eviction class, oldest first
//
// ARGV 1..3 of every script: the epoch the worker knows ("" for none), the
// highest ver it has seen, the epoch to create the scope with. Every reply
// starts {epoch, ver, spent (limbs), held (limbs), calls}.
const prelude = `
-- The call's keys and common arguments (see init).
local KS, S, L, D, known, seen, fresh

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

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- M is the scope's money and counters as this script reads and changes
-- them; P the fields it changed (false: deleted), written by save; C the
-- fields open read for it (false: absent).
local M, P, C, changed

-- get reads field f as this script left it.
local function get(f)
  local v = P[f]
  if v == nil then v = C[f] end
  if v == nil then return redis.call('HGET', S, f) end
  return v or nil
end

local function put(f, v) P[f] = v end

-- touch makes the scope's keys expire idle_ms after now, at most every
-- idle_ms/16 (field t is the last time): they expire between 15/16 of
-- idle_ms and idle_ms after the last write.
local function touch(idle_ms, now)
  if idle_ms <= 0 then return end
  if now then
    if now - (M.t or 0) < idle_ms / 16 then return end
    redis.call('HSET', S, 't', now)
  end
  for _, k in ipairs(KS) do redis.call('PEXPIRE', k, idle_ms) end
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
local function lose(why, idle_ms, retired)
  redis.call('HSET', S, 'lost', why)
  retire(retired)
  touch(idle_ms)
  return redis.error_reply('redisledger: state lost: ' .. why)
end

-- The scope's own fields, read by open.
local FIELDS = {'epoch', 'm', 'lost', 'retired', 'spent', 't'}

-- unpackm reads field m.
local function unpackm(m)
  local ver, s1, s0, h1, h0, calls, seq, n, lx = string.match(m or '', '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')
  if not ver then return nil end
  return {ver = tonumber(ver), s1 = tonumber(s1), s0 = tonumber(s0), h1 = tonumber(h1), h0 = tonumber(h0),
    calls = tonumber(calls), seq = tonumber(seq), n = tonumber(n), lx = tonumber(lx)}
end

local function packm()
  return string.format('%d %d %d %d %d %d %d %d %d', M.ver, M.s1, M.s0, M.h1, M.h0, M.calls, M.seq, M.n, M.lx)
end

-- open checks the scope against what this worker knows and loads M; it
-- reads the fields in extra too, into C. It returns an error reply, or
-- nil.
local function open(idle_ms, extra)
  local fields = FIELDS
  if extra then
    fields = {unpack(FIELDS)}
    for _, f in ipairs(extra) do fields[#fields + 1] = f end
  end
  local v = redis.call('HMGET', S, unpack(fields))
  if v[3] then
    retire(v[4])
    return redis.error_reply('redisledger: state lost: ' .. v[3])
  end
  if not v[1] then
    if known ~= '' then
      return lose('the scope ' .. known .. ' vanished (Redis restarted without its data, evicted or expired it)', idle_ms)
    end
    if redis.call('EXISTS', L, D) > 0 then
      return lose('the scope hash is missing and its other keys are not', idle_ms)
    end
    redis.call('HSET', S, 'epoch', fresh, 'm', '0 0 0 0 0 0 0 0 0')
    redis.call('ZADD', L, '+inf', '!')
    redis.call('ZADD', D, '+inf', '!')
    M = unpackm('0 0 0 0 0 0 0 0 0')
    M.epoch = fresh
    if extra then for _, f in ipairs(extra) do C[f] = false end end
    touch(idle_ms)
    return nil
  end
  if v[5] then
    return redis.error_reply('redisledger: the scope was written by an older version of redisledger, which kept money as decimal text: finish it with that version')
  end
  M = unpackm(v[2])
  if not M then
    M = {}
    return lose('the counters of the scope are missing or damaged', idle_ms, v[4])
  end
  M.epoch, M.t = v[1], tonumber(v[6])
  if known ~= '' and v[1] ~= known then
    if v[4] and string.find(' ' .. v[4] .. ' ', ' ' .. known .. ' ', 1, true) then
      return redis.error_reply('redisledger: state lost: the scope ' .. known .. ' was lost and an operator recovered it as ' .. v[1] .. ': this worker used it before; restart it')
    end
    return lose('the scope ' .. known .. ' was replaced by ' .. v[1], idle_ms, v[4])
  end
  if M.ver < seen then
    return lose('the scope went back to version ' .. M.ver .. ' after a worker saw version ' .. seen .. ' (Redis restarted from an older snapshot or lost writes)', idle_ms, v[4])
  end
  -- Redis drops (evicts, deletes, expires) whole keys: a sorted set that
  -- exists still has its sentinel.
  if redis.call('EXISTS', L, D) < 2 then
    if redis.call('EXISTS', L) == 0 then return lose('the leases of the scope are missing', idle_ms, v[4]) end
    return lose('the ended reservations of the scope are missing', idle_ms, v[4])
  end
  if extra then
    local k = #FIELDS
    for i, f in ipairs(extra) do C[f] = v[k + i] or false end
  end
  return nil
end

-- save writes the script's changes: the fields in P and, when the money
-- or the history changed, M with the next version (or M alone, when only
-- lx changed: dirty).
local dirty

local function save()
  if changed then M.ver = M.ver + 1 end
  if changed or dirty then P.m = packm() end
  local set, del = {}, {}
  for f, v in pairs(P) do
    if v then set[#set + 1] = f; set[#set + 1] = v else del[#del + 1] = f end
  end
  if #set > 0 then redis.call('HSET', S, unpack(set)) end
  if #del > 0 then redis.call('HDEL', S, unpack(del)) end
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

-- ended records how reservation id ended, for its retries.
local function ended(id, state, cost, nonce, now)
  put('d:' .. id, state .. ' ' .. cost .. ' ' .. nonce)
  redis.call('ZADD', D, now, id)
end

-- lease notes that a lease runs until until_ms.
local function lease(until_ms)
  if until_ms < M.lx then
    M.lx = until_ms
    dirty = true
  end
end

-- reap gives back the holds whose lease expired by now, or charges them
-- when their call started, and forgets ended ids older than keep_ms (a
-- few per script). It reads the leases only when one may have expired
-- (field lx).
local function reap(now, keep_ms)
  if now >= M.lx then
    local ids = redis.call('ZRANGEBYSCORE', L, '-inf', now, 'LIMIT', 0, 64)
    for _, id in ipairs(ids) do
      local h = get('h:' .. id)
      if h then
        local ah, al, started = string.match(h, '^(%d+) (%d+) (%d)$')
        unhold(ah, al)
        put('h:' .. id, false)
        if started == '1' then
          spend(ah, al)
          ended(id, 4, ah .. ' ' .. al, '', now)
        end
        changed = true
      end
    end
    if #ids > 0 then redis.call('ZREM', L, unpack(ids)) end
    local lx = now
    if #ids < 64 then
      local first = redis.call('ZRANGE', L, 0, 0, 'WITHSCORES')
      lx = 1e15
      if first[2] and first[2] ~= 'inf' then lx = tonumber(first[2]) end
    end
    M.lx = lx
    dirty = true
  end
  if keep_ms > 0 and M.ver % 8 == 0 then
    local old = redis.call('ZRANGEBYSCORE', D, '-inf', now - keep_ms, 'LIMIT', 0, 16)
    if #old > 0 then
      for _, id in ipairs(old) do put('d:' .. id, false) end
      redis.call('ZREM', D, unpack(old))
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

-- drop removes number n from the space-separated list in field.
local function drop(field, n)
  local l = get(field) or ''
  if string.sub(l, 1, #n + 1) == n .. ' ' then
    l = string.sub(l, #n + 2)
  elseif l == n then
    l = ''
  else
    l = string.gsub(' ' .. l .. ' ', ' ' .. n .. ' ', ' ', 1)
    l = string.gsub(string.gsub(l, '^ +', ''), ' +$', '')
  end
  if l == '' then put(field, false) else put(field, l) end
end

local function push(field, n)
  local l = get(field)
  if l then l = l .. ' ' .. n else l = n end
  put(field, l)
end

local function forget(n, e)
  put('e:' .. n, false)
  drop('f:' .. e.fp, n)
  drop('q' .. rank(e), n)
  M.n = M.n - 1
end

-- entries returns the history entries numbered in the list l.
local function entries(l)
  local ns = {}
  for m in string.gmatch(l or '', '%d+') do ns[#ns + 1] = 'e:' .. m end
  if #ns == 0 then return {} end
  return redis.call('HMGET', S, unpack(ns))
end

-- record appends the entry e ({fp, o, ref, goal}; raw its JSON without
-- the time), stamped now, under the retention rules of agent.Ledger: drop
-- the entries of its fingerprint it makes redundant, then, while there
-- are more than max, evict the oldest of the least useful class other
-- than itself. It reads only the entries of its fingerprint and one
-- evicted entry (the index lists come with open).
local function record(raw, e, now, max)
  local mine = get('f:' .. e.fp)
  if mine then
    local ns = {}
    for m in string.gmatch(mine, '%d+') do ns[#ns + 1] = m end
    for i, old in ipairs(entries(mine)) do
      if old then
        old = cjson.decode(old)
        if redundant(old, e) then forget(ns[i], old) end
      end
    end
  end
  M.seq = M.seq + 1
  local n = tostring(M.seq)
  put('e:' .. n, string.sub(raw, 1, -2) .. ',"at":"' .. string.format('%d', now) .. '"}')
  push('f:' .. e.fp, n)
  push('q' .. rank(e), n)
  M.n = M.n + 1
  while M.n > max do
    local victim
    for r = 0, 3 do
      for m in string.gmatch(get('q' .. r) or '', '%d+') do
        if m ~= n then victim = m; break end
      end
      if victim then break end
    end
    if not victim then break end
    forget(victim, cjson.decode(get('e:' .. victim)))
  end
  changed = true
end

-- init starts a call: its keys and arguments, nothing read or changed.
local function init(keys, args)
  KS, S, L, D = keys, keys[1], keys[2], keys[3]
  known, seen, fresh = args[1], tonumber(args[2]), args[3]
  M, P, C, changed, dirty = {}, {}, {}, false, false
end
`

// reserveScript: ARGV 4.. id, amount (two limbs), limit (two limbs, ""
// for none), max calls (0 for none), lease ms, idle ms, started (0|1),
// keep ms, fingerprint ("" for none). Reply: head, then 1 when held (or
// already held), 0 when the limits do not hold, the clock in ms, then the
// JSON of the entries of the fingerprint, oldest first.
var reserveScript = newScript("reserve", `
local id, a1, a0, max_calls, lease_ms, idle = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local fp = ARGV[14]
local extra = {'h:' .. id, 'd:' .. id}
if fp ~= '' then extra[3] = 'f:' .. fp end
local bad = open(idle, extra)
if bad then return bad end
local now = now_ms()
reap(now, tonumber(ARGV[13]))
local function reply(ok)
  local out = head({ok, tostring(now)})
  if fp ~= '' then
    for _, raw in ipairs(entries(get('f:' .. fp))) do out[#out + 1] = raw end
  end
  return out
end
if get('h:' .. id) then
  save()
  return reply(1)
end
if get('d:' .. id) then
  save()
  return redis.error_reply('redisledger: reservation ended: ' .. id)
end
local t1, t0 = add(M.s1, M.s0, M.h1, M.h0)
t1, t0 = add(t1, t0, a1, a0)
if ((a1 > 0 or a0 > 0) and ARGV[7] ~= '' and not le(t1, t0, tonumber(ARGV[7]), tonumber(ARGV[8])))
  or (max_calls > 0 and M.calls + 1 > max_calls) then
  save()
  touch(idle, now)
  return reply(0)
end
M.h1, M.h0 = add(M.h1, M.h0, a1, a0)
M.calls = M.calls + 1
put('h:' .. id, ARGV[5] .. ' ' .. ARGV[6] .. ' ' .. ARGV[12])
redis.call('ZADD', L, now + lease_ms, id)
lease(now + lease_ms)
changed = true
save()
touch(idle, now)
return reply(1)
`)

// cancelScript: ARGV 4.. id, idle ms, keep ms. Withdraws the hold and its
// call; gives back a charge made at lease expiry. Reply: head.
var cancelScript = newScript("cancel", `
local id, idle = ARGV[4], tonumber(ARGV[5])
local bad = open(idle, {'h:' .. id, 'd:' .. id})
if bad then return bad end
local now = now_ms()
reap(now, tonumber(ARGV[6]))
local h = get('h:' .. id)
if h then
  unhold(string.match(h, '^(%d+) (%d+)'))
  M.calls = M.calls - 1
  put('h:' .. id, false)
  redis.call('ZREM', L, id)
  ended(id, 3, '0 0', '', now)
  changed = true
else
  local c1, c0 = string.match(get('d:' .. id) or '', '^4 (%d+) (%d+)')
  if c1 then
    uncharge(c1, c0)
    M.calls = M.calls - 1
    ended(id, 3, '0 0', '', now)
    changed = true
  end
end
local wrote = changed
save()
if wrote then touch(idle, now) end
return head()
`)

// settleScript: ARGV 4.. id, cost (two limbs), keep ms, entry JSON (""
// for none), max entries, idle ms, nonce, the entry's fingerprint,
// outcome, result reference and goal hash (as in its JSON). Reply:
// head, then state (0 settled, 1 settled late, 2 repeat of an earlier
// settlement), late (0|1), cost counted (two limbs).
var settleScript = newScript("settle", `
local id, nonce, idle = ARGV[4], ARGV[11], tonumber(ARGV[10])
local extra = {'d:' .. id, 'h:' .. id}
if ARGV[8] ~= '' then
  for _, f in ipairs({'f:' .. ARGV[12], 'q0', 'q1', 'q2', 'q3'}) do extra[#extra + 1] = f end
end
local bad = open(idle, extra)
if bad then return bad end
local now = now_ms()
reap(now, tonumber(ARGV[7]))
local d = get('d:' .. id)
local late = 1
if d then
  local st, c1, c0, n = string.match(d, '^(%d) (%d+) (%d+) ?(.*)$')
  if st == '0' or st == '1' then
    save()
    if n == nonce then return head({tonumber(st), tonumber(st), c1, c0}) end
    return head({2, tonumber(st), c1, c0})
  end
  if st == '4' then uncharge(c1, c0) end
else
  local h = get('h:' .. id)
  if h then
    unhold(string.match(h, '^(%d+) (%d+)'))
    put('h:' .. id, false)
    redis.call('ZREM', L, id)
    late = 0
  end
end
spend(ARGV[5], ARGV[6])
ended(id, late, ARGV[5] .. ' ' .. ARGV[6], nonce, now)
if ARGV[8] ~= '' then record(ARGV[8], {fp = ARGV[12], o = ARGV[13], ref = ARGV[14], goal = ARGV[15]}, now, tonumber(ARGV[9])) end
changed = true
save()
touch(idle, now)
return head({late, late, ARGV[5], ARGV[6]})
`)

// releaseScript: ARGV 4.. id, idle ms, keep ms. Frees the hold without
// spending; gives back a charge made at lease expiry. Reply: head.
var releaseScript = newScript("release", `
local id, idle = ARGV[4], tonumber(ARGV[5])
local bad = open(idle, {'h:' .. id, 'd:' .. id})
if bad then return bad end
local now = now_ms()
reap(now, tonumber(ARGV[6]))
local h = get('h:' .. id)
if h then
  unhold(string.match(h, '^(%d+) (%d+)'))
  put('h:' .. id, false)
  redis.call('ZREM', L, id)
  ended(id, 3, '0 0', '', now)
  changed = true
else
  local c1, c0 = string.match(get('d:' .. id) or '', '^4 (%d+) (%d+)')
  if c1 then
    uncharge(c1, c0)
    ended(id, 3, '0 0', '', now)
    changed = true
  end
end
local wrote = changed
save()
if wrote then touch(idle, now) end
return head()
`)

// renewScript: ARGV 4.. lease ms, idle ms, keep ms, then reservation ids.
// Extends the leases of the ids still held and, when there was one, the
// expiry of the scope's keys. Reply: head, then how many were held.
var renewScript = newScript("renew", `
local idle = tonumber(ARGV[5])
local extra = {}
for i = 7, #ARGV do extra[#extra + 1] = 'h:' .. ARGV[i] end
local bad = open(idle, extra)
if bad then return bad end
local now = now_ms()
reap(now, tonumber(ARGV[6]))
local until_ms, n = now + tonumber(ARGV[4]), 0
for i = 7, #ARGV do
  if get('h:' .. ARGV[i]) then
    redis.call('ZADD', L, 'XX', until_ms, ARGV[i])
    n = n + 1
  end
end
if n > 0 then lease(until_ms) end
local wrote = changed
save()
if n > 0 or wrote then touch(idle, now) end
return head({n})
`)

// appendScript: ARGV 4.. entry JSON, max entries, idle ms, the entry's
// fingerprint, outcome, result reference and goal hash. Reply: head.
var appendScript = newScript("append", `
local idle = tonumber(ARGV[6])
local bad = open(idle, {'f:' .. ARGV[7], 'q0', 'q1', 'q2', 'q3'})
if bad then return bad end
local now = now_ms()
record(ARGV[4], {fp = ARGV[7], o = ARGV[8], ref = ARGV[9], goal = ARGV[10]}, now, tonumber(ARGV[5]))
save()
touch(idle, now)
return head()
`)

// stateScript: ARGV 4.. fingerprint, one (1: only the entries of the
// fingerprint, none for ""; 0: every entry), keep ms, idle ms. Reply:
// head, now ms, then the entries' JSON, oldest first.
var stateScript = newScript("state", `
local extra = {'q0', 'q1', 'q2', 'q3'}
if ARGV[5] == '1' then extra = {'f:' .. ARGV[4]} end
local bad = open(tonumber(ARGV[7]), extra)
if bad then return bad end
local now = now_ms()
reap(now, tonumber(ARGV[6]))
save()
local out = head({tostring(now)})
local list
if ARGV[5] == '1' then
  if ARGV[4] ~= '' then list = get('f:' .. ARGV[4]) end
else
  local ns = {}
  for r = 0, 3 do
    for m in string.gmatch(get('q' .. r) or '', '%d+') do ns[#ns + 1] = tonumber(m) end
  end
  table.sort(ns)
  list = table.concat(ns, ' ')
end
for _, raw in ipairs(entries(list)) do out[#out + 1] = raw end
return out
`)

// recoverScript: ARGV 1.. the new epoch, spent (two limbs), idle ms.
// It does not run the prelude's checks: it repairs what they refuse. It
// fails unless the scope is marked lost; otherwise it gives the scope the
// new epoch and the spending given, drops every hold and lease, keeps the
// call count, history and ended ids that are left, recreates a missing
// sorted set with its sentinel and clears the mark. The epochs workers
// knew before (the old one, and those the workers that found the loss
// knew: field retired) are kept, so that such a worker is refused without
// marking the scope lost again. Reply: {epoch, ver}.
var recoverScript = redis.NewScript(`
local S, L, D = KEYS[1], KEYS[2], KEYS[3]
local epoch, idle = ARGV[1], tonumber(ARGV[4])
local why = redis.call('HGET', S, 'lost')
if not why then
  return redis.error_reply('redisledger: recover: the scope is not marked lost')
end
local drop = {}
for _, f in ipairs(redis.call('HKEYS', S)) do
  if string.sub(f, 1, 2) == 'h:' then drop[#drop + 1] = f end
end
for i = 1, #drop, 1000 do
  redis.call('HDEL', S, unpack(drop, i, math.min(i + 999, #drop)))
end
local v = redis.call('HMGET', S, 'm', 'epoch', 'retired')
local ver, calls, seq, n = string.match(v[1] or '', '^(%S+) %S+ %S+ %S+ %S+ (%S+) (%S+) (%S+) %S+$')
ver = tonumber(ver or '0') + 1
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
redis.call('HSET', S, 'epoch', epoch, 'm', string.format('%d %d %d 0 0 %d %d %d 0', ver, ARGV[2], ARGV[3], calls or 0, seq or 0, n or 0))
redis.call('DEL', L)
redis.call('ZADD', L, '+inf', '!')
redis.call('ZADD', D, '+inf', '!')
if idle > 0 then
  for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, idle) end
end
return {epoch, ver}
`)

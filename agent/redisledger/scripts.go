package redisledger

import "github.com/redis/go-redis/v9"

// The scripts run atomically on the Redis node that owns the scope's slot:
// every key they touch carries the scope's hash tag. Each one first checks
// that the scope is the one this worker knows (see "State loss" in the
// package doc), then gives back or charges the holds whose lease expired
// ("reaping"), so that no reader ever sees an expired hold, without a
// background process.
//
// Cost. A script reads the fields it needs in one HMGET with the scope's
// money, writes every changed field in one HSET and one HDEL at its end,
// and checks both sorted sets with the range queries that reap them (their
// sentinel scores -inf, so it is always in range): a call that runs costs
// about a dozen Redis commands in all, none of which grows with the
// history.
//
// Money is an integer count of attodollars (10^-18 USD) held as decimal
// text, added, subtracted and compared digit by digit: Lua's numbers are
// doubles, exact only up to 2^53, which 18 fraction digits would exceed at
// 0.009 USD.
//
// KEYS: 1 the scope (hash), 2 leases (sorted set: hold id by lease expiry
// in ms), 3 ended (sorted set: ended reservation id by end time in ms).
// Both sorted sets hold the member "!" with score -inf from the scope's
// creation: a set without it lost its contents.
//
// Fields of the scope hash:
//
//	epoch  id of this incarnation of the scope, chosen by its creator
//	ver    write counter: +1 on every change of money or history
//	spent, held (attodollars), calls, seq (last entry number), n (entries)
//	t      when the keys' expiry was last extended (ms)
//	lost   why the scope was found lost; once set, every script fails
//	retired the epochs the scope had before it was lost and recovered
//	       (Store.Recover), space-separated: a worker that knows one is
//	       refused without marking the scope lost again
//	h:<id> a hold: "<amount> <started 0|1>"
//	d:<id> an ended reservation: "<state> <cost> <nonce>", state 0 settled,
//	       1 settled late, 3 released, 4 charged at lease expiry (cost is
//	       the amount charged)
//	e:<n>  history entry number n: "<at ms> <rank> <len fp> <len goal>
//	       <len id> <len outcome> <len ref> " then fp, goal, id, outcome
//	       and ref run together (see encodeEntry); rank is the entry's
//	       eviction class, 0 (evicted first) to 3
//	f:<fp> the entry numbers of fingerprint fp, oldest first
//	q0..q3 the entry numbers of each eviction class, oldest first
//
// ARGV 1..5 of every script: the epoch the worker knows ("" for none), the
// highest ver it has seen, the epoch to create the scope with, the idle
// expiry in ms (0 for none), how long ended ids are kept in ms. Every
// reply starts {epoch, ver, spent, held, calls}.
const prelude = `
local S, L, D = KEYS[1], KEYS[2], KEYS[3]
local known, seen, fresh = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local idle, keep = tonumber(ARGV[4]), tonumber(ARGV[5])

-- Numbers are split into limbs of 14 digits, least significant first:
-- a sum of two limbs and a carry stays far below 2^53.
local W, B = 14, 1e14

local function limbs(a)
  local t, i = {}, #a
  while i > 0 do
    local j = i - W + 1
    if j < 1 then j = 1 end
    t[#t + 1] = tonumber(string.sub(a, j, i))
    i = j - 1
  end
  return t
end

local function unlimbs(t)
  local n = #t
  while n > 1 and t[n] == 0 do n = n - 1 end
  if n == 0 then return '0' end
  local parts = {string.format('%d', t[n])}
  for k = n - 1, 1, -1 do parts[#parts + 1] = string.format('%014d', t[k]) end
  return table.concat(parts)
end

-- Amounts of at most 28 digits (10^10 USD), nearly all of them, are added
-- and subtracted as two limbs in Lua numbers, without tables.
local function split(a)
  local n = #a
  if n <= W then return 0, tonumber(a) end
  return tonumber(string.sub(a, 1, n - W)), tonumber(string.sub(a, n - W + 1))
end

local function join(h, l)
  if h == 0 then return string.format('%d', l) end
  return string.format('%d%014d', h, l)
end

local function add(a, b)
  if b == '0' then return a end
  if a == '0' then return b end
  if #a <= 2 * W and #b <= 2 * W then
    local ah, al = split(a)
    local bh, bl = split(b)
    local h, l = ah + bh, al + bl
    if l >= B then l = l - B; h = h + 1 end
    if h < B then return join(h, l) end
  end
  local x, y, r, carry = limbs(a), limbs(b), {}, 0
  for k = 1, math.max(#x, #y) do
    local d = (x[k] or 0) + (y[k] or 0) + carry
    if d >= B then carry = 1; d = d - B else carry = 0 end
    r[k] = d
  end
  if carry > 0 then r[#r + 1] = carry end
  return unlimbs(r)
end

-- sub returns a - b, or nil when b > a (the state is inconsistent).
local function sub(a, b)
  if b == '0' then return a end
  if #a <= 2 * W and #b <= 2 * W then
    local ah, al = split(a)
    local bh, bl = split(b)
    local h, l = ah - bh, al - bl
    if l < 0 then l = l + B; h = h - 1 end
    if h < 0 then return nil end
    return join(h, l)
  end
  local x, y, r, borrow = limbs(a), limbs(b), {}, 0
  if #y > #x then return nil end
  for k = 1, #x do
    local d = x[k] - (y[k] or 0) - borrow
    if d < 0 then d = d + B; borrow = 1 else borrow = 0 end
    r[k] = d
  end
  if borrow ~= 0 then return nil end
  return unlimbs(r)
end

local function cmp(a, b)
  if #a ~= #b then if #a < #b then return -1 end return 1 end
  if a == b then return 0 end
  if a < b then return -1 end
  return 1
end

-- The hash's fields as this script sees them: C what was read (false for
-- a missing field), P what it will write, X what it will delete. get
-- reads through them, so a field read in the first HMGET costs nothing
-- more; save writes P and X in one HSET and one HDEL.
local C, P, X = {}, {}, {}

local function get(f)
  if X[f] then return nil end
  local v = P[f]
  if v ~= nil then return v end
  v = C[f]
  if v == nil then
    v = redis.call('HGET', S, f)
    C[f] = v
  end
  if v == false then return nil end
  return v
end

local function put(f, v) P[f] = v; X[f] = nil end
local function del(f) X[f] = true; P[f] = nil end

-- fetch reads the fields of list not read yet, in one HMGET.
local function fetch(list)
  local want = {}
  for _, f in ipairs(list) do
    if C[f] == nil and P[f] == nil and not X[f] then want[#want + 1] = f end
  end
  for i = 1, #want, 500 do
    local part = {unpack(want, i, math.min(i + 499, #want))}
    local v = redis.call('HMGET', S, unpack(part))
    for k, f in ipairs(part) do C[f] = v[k] end
  end
end

-- Sorted set changes, made at save: LA/DA score-member pairs to add to
-- L/D, LR/DR members to remove.
local LA, LR, DA, DR = {}, {}, {}, {}

local function expire()
  if idle <= 0 then return end
  for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, idle) end
end

-- retire notes the epoch this worker knows among those of the scope
-- before it was lost (field retired), so that after an operator's
-- Recover the worker is refused without marking the scope lost again.
local function retire(retired)
  if known == '' or string.find(' ' .. (retired or '') .. ' ', ' ' .. known .. ' ', 1, true) then return end
  local l = known
  if retired then l = retired .. ' ' .. known end
  redis.call('HSET', S, 'retired', l)
end

-- lose marks the scope lost, for every worker, and fails the script.
local function lose(why, retired)
  redis.call('HSET', S, 'lost', why)
  retire(retired)
  expire()
  return redis.error_reply('redisledger: state lost: ' .. why)
end

-- M is the scope's money as this script reads and changes it; now is
-- Redis's clock in ms; T the last extension of the keys' expiry.
local M, now, T = {}, 0, 0
local changed = false

local function less(a, b, what)
  local r = sub(a, b)
  if not r then error('redisledger: state lost: ' .. what .. ' would be negative') end
  return r
end

-- ended records how reservation id ended, for its retries.
local function ended(id, state, cost, nonce)
  put('d:' .. id, state .. ' ' .. cost .. ' ' .. nonce)
  DA[#DA + 1] = now
  DA[#DA + 1] = id
end

-- open checks the scope against what this worker knows, loads M with the
-- fields of extra, gives back the holds whose lease expired by now, or
-- charges them when their call started, and forgets a few ended ids older
-- than keep. It returns an error reply, or nil.
local function open(extra)
  local fields = {'epoch', 'ver', 'spent', 'held', 'calls', 'lost', 'seq', 'n', 't', 'retired'}
  for _, f in ipairs(extra) do fields[#fields + 1] = f end
  local v = redis.call('HMGET', S, unpack(fields))
  if v[6] then
    retire(v[10])
    return redis.error_reply('redisledger: state lost: ' .. v[6])
  end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if not v[1] then
    if known ~= '' then
      return lose('the scope ' .. known .. ' vanished (Redis restarted without its data, evicted or expired it)')
    end
    if redis.call('EXISTS', L) == 1 or redis.call('EXISTS', D) == 1 then
      return lose('the scope hash is missing and its other keys are not')
    end
    redis.call('HSET', S, 'epoch', fresh, 'ver', 0, 'spent', '0', 'held', '0', 'calls', 0, 'seq', 0, 'n', 0, 't', now)
    redis.call('ZADD', L, '-inf', '!')
    redis.call('ZADD', D, '-inf', '!')
    M = {epoch = fresh, ver = 0, spent = '0', held = '0', calls = 0, seq = 0, n = 0}
    T = now
    for i = 11, #fields do C[fields[i]] = false end
    expire()
    return nil
  end
  for i = 11, #fields do C[fields[i]] = v[i] end
  M = {epoch = v[1], ver = tonumber(v[2]), spent = v[3], held = v[4], calls = tonumber(v[5]), seq = tonumber(v[7]), n = tonumber(v[8])}
  T = tonumber(v[9] or '0')
  if known ~= '' and v[1] ~= known then
    if v[10] and string.find(' ' .. v[10] .. ' ', ' ' .. known .. ' ', 1, true) then
      return redis.error_reply('redisledger: state lost: the scope ' .. known .. ' was lost and an operator recovered it as ' .. v[1] .. ': this worker used it before; restart it')
    end
    return lose('the scope ' .. known .. ' was replaced by ' .. v[1], v[10])
  end
  if M.ver < seen then
    return lose('the scope went back to version ' .. M.ver .. ' after a worker saw version ' .. seen .. ' (Redis restarted from an older snapshot or lost writes)', v[10])
  end
  -- Redis drops (evicts, deletes, expires) whole keys: a sorted set that
  -- exists still has its sentinel, the first member of every range.
  local ids = redis.call('ZRANGEBYSCORE', L, '-inf', now, 'LIMIT', 0, 65)
  if ids[1] ~= '!' then return lose('the leases of the scope are missing', v[10]) end
  local old = redis.call('ZRANGEBYSCORE', D, '-inf', now - keep, 'LIMIT', 0, 17)
  if old[1] ~= '!' then return lose('the ended reservations of the scope are missing', v[10]) end
  for i = 2, #ids do
    local id = ids[i]
    local h = get('h:' .. id)
    if h then
      local amount, started = string.match(h, '^(%d+) (%d)$')
      M.held = less(M.held, amount, 'the money held')
      del('h:' .. id)
      if started == '1' then
        M.spent = add(M.spent, amount)
        ended(id, 4, amount, '')
      end
      changed = true
    end
    LR[#LR + 1] = id
  end
  for i = 2, #old do
    del('d:' .. old[i])
    DR[#DR + 1] = old[i]
  end
  return nil
end

-- touch makes the scope's keys expire idle after now, at most every
-- idle/16 (field t is the last time): they expire between 15/16 of idle
-- and idle after the last write.
local function touch()
  if idle <= 0 or now - T < idle / 16 then return end
  put('t', now)
  expire()
end

local function batch(cmd, key, list)
  for i = 1, #list, 1000 do
    redis.call(cmd, key, unpack(list, i, math.min(i + 999, #list)))
  end
end

-- save writes what the script changed.
local function save()
  if changed then
    M.ver = M.ver + 1
    put('ver', M.ver); put('spent', M.spent); put('held', M.held)
    put('calls', M.calls); put('seq', M.seq); put('n', M.n)
  end
  local w, x = {}, {}
  for f, v in pairs(P) do w[#w + 1] = f; w[#w + 1] = v end
  for f in pairs(X) do x[#x + 1] = f end
  batch('HSET', S, w)
  batch('HDEL', S, x)
  batch('ZREM', L, LR)
  batch('ZADD', L, LA)
  batch('ZREM', D, DR)
  batch('ZADD', D, DA)
end

local function head(extra)
  local out = {M.epoch, M.ver, M.spent, M.held, M.calls}
  if extra then for _, x in ipairs(extra) do out[#out + 1] = x end end
  return out
end

-- entries returns the history entries numbered in the list l.
local function entries(l)
  local fs = {}
  for m in string.gmatch(l or '', '%d+') do fs[#fs + 1] = 'e:' .. m end
  fetch(fs)
  local out = {}
  for _, f in ipairs(fs) do
    local v = get(f)
    if v then out[#out + 1] = v end
  end
  return out
end
`

// history is the part of the scripts that record history entries.
const history = `
-- entry reads a stored history entry's rank, fingerprint and goal.
local function entry(v)
  local r, lf, lg, p = string.match(v, '^%d+ (%d) (%d+) (%d+) %d+ %d+ %d+ ()')
  if not r then error('redisledger: state lost: a history entry is malformed') end
  lf, lg = tonumber(lf), tonumber(lg)
  return tonumber(r), string.sub(v, p, p + lf - 1), string.sub(v, p + lf, p + lf + lg - 1)
end

-- redundant reports whether a new entry of rank r and goal g makes an
-- older one of the same fingerprint redundant (agent.Ledger's rules): a
-- transient failure any older one, a success an older success of its
-- goal unless the older one has a result reference and it has none.
local function redundant(or_, og, r, g)
  if r == 0 then return or_ == 0 end
  if r == 1 or r == 2 then
    return (or_ == 1 or or_ == 2) and og == g and (r == 2 or or_ == 1)
  end
  return false
end

-- drop removes number n from the space-separated list in field.
local function drop(field, n)
  local l = get(field) or ''
  l = string.gsub(' ' .. l .. ' ', ' ' .. n .. ' ', ' ', 1)
  l = string.gsub(string.gsub(l, '^ +', ''), ' +$', '')
  if l == '' then del(field) else put(field, l) end
end

local function push(field, n)
  local l = get(field)
  if l then put(field, l .. ' ' .. n) else put(field, n) end
end

local function forget(n, r, fp)
  del('e:' .. n)
  drop('f:' .. fp, n)
  drop('q' .. r, n)
  M.n = M.n - 1
end

-- victim is the oldest entry of the least useful class, other than skip.
local function victim(skip)
  for r = 0, 3 do
    local l = get('q' .. r)
    if l then
      for m in string.gmatch(l, '%d+') do
        if m ~= skip then return m end
      end
    end
  end
end

-- fields of entries: the fields a record of an entry of fingerprint fp
-- reads, for open.
local function recordFields(tail)
  local _, fp = entry('0 ' .. tail)
  return {'f:' .. fp, 'q0', 'q1', 'q2', 'q3'}
end

-- record appends the entry (its encoding without the time), stamped now,
-- under the retention rules of agent.Ledger: drop the entries of its
-- fingerprint it makes redundant, then, while there are more than max,
-- evict the oldest of the least useful class other than itself. It reads
-- only the entries of its fingerprint and one evicted entry, in one HMGET.
local function record(tail, max)
  local val = now .. ' ' .. tail
  local r, fp, g = entry(val)
  local mine = get('f:' .. fp)
  local want = {}
  if mine then
    for m in string.gmatch(mine, '%d+') do want[#want + 1] = 'e:' .. m end
  end
  if M.n + 1 > max then
    local v = victim(nil)
    if v then want[#want + 1] = 'e:' .. v end
  end
  fetch(want)
  if mine then
    for m in string.gmatch(mine, '%d+') do
      local old = get('e:' .. m)
      if old then
        local or_, _, og = entry(old)
        if redundant(or_, og, r, g) then forget(m, or_, fp) end
      end
    end
  end
  M.seq = M.seq + 1
  local n = tostring(M.seq)
  put('e:' .. n, val)
  push('f:' .. fp, n)
  push('q' .. r, n)
  M.n = M.n + 1
  while M.n > max do
    local v = victim(n)
    if not v then break end
    local ev = get('e:' .. v)
    if not ev then error('redisledger: state lost: history entry ' .. v .. ' is missing') end
    local vr, vfp = entry(ev)
    forget(v, vr, vfp)
  end
  changed = true
end

`

// reserveScript: ARGV 6.. id, amount, limit ("" for none), max calls (0
// for none), lease ms, started (0|1), fingerprint ("" for none). Reply:
// head, then 1 when held (or already held), 0 when the limits do not
// hold, the clock in ms, then the entries of the fingerprint, oldest
// first.
var reserveScript = redis.NewScript(prelude + `
local id, amount, limit, max_calls, lease, started, fp = ARGV[6], ARGV[7], ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11], ARGV[12]
local extra = {'h:' .. id, 'd:' .. id}
if fp ~= '' then extra[3] = 'f:' .. fp end
local bad = open(extra)
if bad then return bad end
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
if (amount ~= '0' and limit ~= '' and cmp(add(add(M.spent, M.held), amount), limit) > 0)
  or (max_calls > 0 and M.calls + 1 > max_calls) then
  touch()
  save()
  return reply(0)
end
M.held = add(M.held, amount)
M.calls = M.calls + 1
put('h:' .. id, amount .. ' ' .. started)
LA[#LA + 1] = now + lease
LA[#LA + 1] = id
changed = true
touch()
save()
return reply(1)
`)

// cancelScript: ARGV 6.. id. Withdraws the hold and its call; gives back
// a charge made at lease expiry. Reply: head.
var cancelScript = redis.NewScript(prelude + `
local id = ARGV[6]
local bad = open({'h:' .. id, 'd:' .. id})
if bad then return bad end
local h = get('h:' .. id)
if h then
  M.held = less(M.held, string.match(h, '^(%d+)'), 'the money held')
  M.calls = M.calls - 1
  del('h:' .. id)
  LR[#LR + 1] = id
  ended(id, 3, '0', '')
  changed = true
else
  local d = get('d:' .. id)
  local c = d and string.match(d, '^4 (%d+)')
  if c then
    M.spent = less(M.spent, c, 'the money spent')
    M.calls = M.calls - 1
    ended(id, 3, '0', '')
    changed = true
  end
end
if changed then touch() end
save()
return head()
`)

// settleScript: ARGV 6.. id, cost, entry ("" for none, else its encoding
// without the time), max entries, nonce. Reply: head, then state (0
// settled, 1 settled late, 2 repeat of an earlier settlement), late
// (0|1), cost counted.
var settleScript = redis.NewScript(prelude + history + `
local id, cost, tail, max, nonce = ARGV[6], ARGV[7], ARGV[8], tonumber(ARGV[9]), ARGV[10]
local extra = {}
if tail ~= '' then extra = recordFields(tail) end
extra[#extra + 1] = 'd:' .. id
extra[#extra + 1] = 'h:' .. id
local bad = open(extra)
if bad then return bad end
local d = get('d:' .. id)
local late = 1
if d then
  local st, c, n = string.match(d, '^(%d) (%d+) ?(.*)$')
  if st == '0' or st == '1' then
    save()
    if n == nonce then return head({tonumber(st), tonumber(st), c}) end
    return head({2, tonumber(st), c})
  end
  if st == '4' then M.spent = less(M.spent, c, 'the money spent') end
else
  local h = get('h:' .. id)
  if h then
    M.held = less(M.held, string.match(h, '^(%d+)'), 'the money held')
    del('h:' .. id)
    LR[#LR + 1] = id
    late = 0
  end
end
M.spent = add(M.spent, cost)
ended(id, late, cost, nonce)
if tail ~= '' then record(tail, max) end
changed = true
touch()
save()
return head({late, late, cost})
`)

// releaseScript: ARGV 6.. id. Frees the hold without spending; gives
// back a charge made at lease expiry. Reply: head.
var releaseScript = redis.NewScript(prelude + `
local id = ARGV[6]
local bad = open({'h:' .. id, 'd:' .. id})
if bad then return bad end
local h = get('h:' .. id)
if h then
  M.held = less(M.held, string.match(h, '^(%d+)'), 'the money held')
  del('h:' .. id)
  LR[#LR + 1] = id
  ended(id, 3, '0', '')
  changed = true
else
  local d = get('d:' .. id)
  local c = d and string.match(d, '^4 (%d+)')
  if c then
    M.spent = less(M.spent, c, 'the money spent')
    ended(id, 3, '0', '')
    changed = true
  end
end
if changed then touch() end
save()
return head()
`)

// renewScript: ARGV 6.. lease ms, then reservation ids. Extends the
// leases of the ids still held and, when there was one, the expiry of the
// scope's keys. Reply: head, then how many were held.
var renewScript = redis.NewScript(prelude + `
local bad = open({})
if bad then return bad end
local fs = {}
for i = 7, #ARGV do fs[#fs + 1] = 'h:' .. ARGV[i] end
fetch(fs)
local until_ms, n, z = now + tonumber(ARGV[6]), 0, {}
for i = 7, #ARGV do
  if get('h:' .. ARGV[i]) then
    z[#z + 1] = until_ms
    z[#z + 1] = ARGV[i]
    n = n + 1
  end
end
if n > 0 or changed then touch() end
save()
for i = 1, #z, 1000 do
  redis.call('ZADD', L, 'XX', unpack(z, i, math.min(i + 999, #z)))
end
return head({n})
`)

// appendScript: ARGV 6.. entry (its encoding without the time), max
// entries. Reply: head.
var appendScript = redis.NewScript(prelude + history + `
local bad = open(recordFields(ARGV[6]))
if bad then return bad end
record(ARGV[6], tonumber(ARGV[7]))
touch()
save()
return head()
`)

// stateScript: ARGV 6.. fingerprint, one (1: only the entries of the
// fingerprint, none for ""; 0: every entry). Reply: head, now ms, then
// the entries, oldest first.
var stateScript = redis.NewScript(prelude + `
local fp, one = ARGV[6], ARGV[7] == '1'
local extra = {'q0', 'q1', 'q2', 'q3'}
if one then extra = {} if fp ~= '' then extra = {'f:' .. fp} end end
local bad = open(extra)
if bad then return bad end
save()
local out = head({tostring(now)})
local list
if one then
  if fp ~= '' then list = get('f:' .. fp) end
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

// recoverScript: ARGV 1.. the new epoch, spent (attodollars), idle ms.
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
local epoch, spent, idle = ARGV[1], ARGV[2], tonumber(ARGV[3])
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
local v = redis.call('HMGET', S, 'ver', 'calls', 'seq', 'n', 'epoch', 'retired')
local ver = tonumber(v[1] or '0') + 1
local retired = v[6]
if v[5] then
  if retired then retired = retired .. ' ' .. v[5] else retired = v[5] end
end
if retired then
  -- the last 16 epochs are enough: older workers were long stopped
  local all = {}
  for e in string.gmatch(retired, '%S+') do all[#all + 1] = e end
  retired = table.concat(all, ' ', math.max(1, #all - 15))
  redis.call('HSET', S, 'retired', retired)
end
redis.call('HDEL', S, 'lost')
redis.call('HSET', S, 'epoch', epoch, 'ver', ver, 'spent', spent, 'held', '0',
  'calls', v[2] or 0, 'seq', v[3] or 0, 'n', v[4] or 0)
redis.call('DEL', L)
redis.call('ZADD', L, '-inf', '!')
redis.call('ZADD', D, '-inf', '!')
if idle > 0 then
  for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, idle) end
end
return {epoch, ver}
`)

package redisledger

import "github.com/redis/go-redis/v9"

// The scripts run atomically on the Redis node that owns the scope's slot:
// every key they touch carries the scope's hash tag. Each one first gives
// back the money of reservations whose lease expired ("reaping"), so that
// no reader ever sees expired holds, without a background process.
//
// Money is an integer count of attodollars (10^-18 USD) held as decimal
// text, added, subtracted and compared digit by digit: Lua's numbers are
// doubles, exact only up to 2^53, which 18 fraction digits would exceed at
// 0.009 USD. Only non-negative values ever occur (a hold is subtracted
// only from a total that includes it).
//
// KEYS (all scripts): 1 money (hash: spent, held, calls), 2 holds (hash:
// reservation id -> amount), 3 leases (sorted set: id by lease expiry in
// ms), 4 settled (sorted set: id by settlement time in ms), 5 history
// (list of JSON entries, oldest first).
const prelude = `
local K_money, K_holds, K_leases, K_settled, K_hist = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]

local function trim(s)
  s = string.gsub(s, '^0+', '')
  if s == '' then return '0' end
  return s
end

local function add(a, b)
  local r, carry, i, j = {}, 0, #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local d = carry
    if i > 0 then d = d + string.byte(a, i) - 48; i = i - 1 end
    if j > 0 then d = d + string.byte(b, j) - 48; j = j - 1 end
    if d >= 10 then carry = 1; d = d - 10 else carry = 0 end
    r[#r + 1] = string.char(48 + d)
  end
  return trim(string.reverse(table.concat(r)))
end

-- sub returns a - b for a >= b.
local function sub(a, b)
  local r, borrow, i, j = {}, 0, #a, #b
  while i > 0 do
    local d = string.byte(a, i) - 48 - borrow
    if j > 0 then d = d - (string.byte(b, j) - 48); j = j - 1 end
    if d < 0 then d = d + 10; borrow = 1 else borrow = 0 end
    r[#r + 1] = string.char(48 + d)
    i = i - 1
  end
  if borrow ~= 0 or j > 0 then error('redisledger: negative total') end
  return trim(string.reverse(table.concat(r)))
end

local function cmp(a, b)
  if #a ~= #b then if #a < #b then return -1 end return 1 end
  if a == b then return 0 end
  if a < b then return -1 end
  return 1
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function money()
  local v = redis.call('HMGET', K_money, 'spent', 'held', 'calls')
  return v[1] or '0', v[2] or '0', tonumber(v[3] or '0')
end

-- reap gives back the holds whose lease expired by now.
local function reap(now)
  local ids = redis.call('ZRANGEBYSCORE', K_leases, '-inf', now)
  if #ids == 0 then return end
  local spent, held, calls = money()
  for _, id in ipairs(ids) do
    local amount = redis.call('HGET', K_holds, id)
    if amount then
      held = sub(held, amount)
      redis.call('HDEL', K_holds, id)
    end
    redis.call('ZREM', K_leases, id)
  end
  redis.call('HSET', K_money, 'held', held)
end

-- touch makes every key of the scope expire idle_ms after this write.
local function touch(idle_ms)
  if idle_ms > 0 then
    for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, idle_ms) end
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

-- record appends the JSON entry raw, stamped now, under the retention
-- rules of agent.Ledger: drop the entries it makes redundant, then evict
-- the oldest of the least useful class while there are more than max.
local function record(raw, now, max)
  local e = cjson.decode(raw)
  e.at = tostring(now)
  local list, dropped = {}, false
  for _, r in ipairs(redis.call('LRANGE', K_hist, 0, -1)) do
    local old = cjson.decode(r)
    if redundant(old, e) then dropped = true else list[#list + 1] = {old, r} end
  end
  list[#list + 1] = {e, cjson.encode(e)}
  while #list > max do
    local best = 1
    for i = 2, #list - 1 do
      if rank(list[i][1]) < rank(list[best][1]) then best = i end
    end
    table.remove(list, best)
    dropped = true
  end
  if not dropped then
    redis.call('RPUSH', K_hist, list[#list][2])
    return
  end
  redis.call('DEL', K_hist)
  local out = {}
  for i, p in ipairs(list) do out[i] = p[2] end
  redis.call('RPUSH', K_hist, unpack(out))
end
`

// reserveScript: ARGV id, amount, limit ("" for none), max calls (0 for
// none), lease ms, idle ms. Returns {ok, spent, held, calls}, ok 1 when
// held, 0 when the limits do not hold.
var reserveScript = redis.NewScript(prelude + `
local id, amount, limit, max_calls = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local now = now_ms()
reap(now)
if redis.call('HEXISTS', K_holds, id) == 1 or redis.call('ZSCORE', K_settled, id) then
  return redis.error_reply('redisledger: reservation ' .. id .. ' already exists')
end
local spent, held, calls = money()
if (amount ~= '0' and limit ~= '' and cmp(add(add(spent, held), amount), limit) > 0)
  or (max_calls > 0 and calls + 1 > max_calls) then
  return {0, spent, held, calls}
end
held = add(held, amount)
calls = calls + 1
redis.call('HSET', K_money, 'held', held, 'calls', calls, 'spent', spent)
redis.call('HSET', K_holds, id, amount)
redis.call('ZADD', K_leases, now + tonumber(ARGV[5]), id)
touch(tonumber(ARGV[6]))
return {1, spent, held, calls}
`)

// settleScript: ARGV id, cost, settled retention ms, entry JSON ("" for
// none), max entries, idle ms. Returns {state, spent, held, calls}, state
// 0 settled, 1 settled late (the lease had expired), 2 already settled.
var settleScript = redis.NewScript(prelude + `
local id, cost = ARGV[1], ARGV[2]
local now = now_ms()
reap(now)
if redis.call('ZSCORE', K_settled, id) then
  local spent, held, calls = money()
  return {2, spent, held, calls}
end
local spent, held, calls = money()
local amount = redis.call('HGET', K_holds, id)
local state = 1
if amount then
  state = 0
  held = sub(held, amount)
  redis.call('HDEL', K_holds, id)
  redis.call('ZREM', K_leases, id)
end
spent = add(spent, cost)
redis.call('HSET', K_money, 'spent', spent, 'held', held, 'calls', calls)
redis.call('ZADD', K_settled, now, id)
redis.call('ZREMRANGEBYSCORE', K_settled, '-inf', now - tonumber(ARGV[3]))
if ARGV[4] ~= '' then record(ARGV[4], now, tonumber(ARGV[5])) end
touch(tonumber(ARGV[6]))
return {state, spent, held, calls}
`)

// releaseScript: ARGV id, idle ms. Frees the hold without spending.
var releaseScript = redis.NewScript(prelude + `
local id = ARGV[1]
reap(now_ms())
local amount = redis.call('HGET', K_holds, id)
if amount then
  local spent, held, calls = money()
  redis.call('HSET', K_money, 'held', sub(held, amount))
  redis.call('HDEL', K_holds, id)
  redis.call('ZREM', K_leases, id)
  touch(tonumber(ARGV[2]))
end
return 0
`)

// renewScript: ARGV lease ms, idle ms, then reservation ids. Extends the
// leases of the ids still held and, when there was one, the expiry of the
// scope's keys: a call in flight keeps its scope alive. Returns how many
// were held.
var renewScript = redis.NewScript(prelude + `
local now = now_ms()
reap(now)
local until_ms, n = now + tonumber(ARGV[1]), 0
for i = 3, #ARGV do
  if redis.call('HEXISTS', K_holds, ARGV[i]) == 1 then
    redis.call('ZADD', K_leases, 'XX', until_ms, ARGV[i])
    n = n + 1
  end
end
if n > 0 then touch(tonumber(ARGV[2])) end
return n
`)

// appendScript: ARGV entry JSON, max entries, idle ms.
var appendScript = redis.NewScript(prelude + `
local now = now_ms()
record(ARGV[1], now, tonumber(ARGV[2]))
touch(tonumber(ARGV[3]))
return 0
`)

// stateScript: no ARGV. Returns {now ms, spent, held, calls, entry JSON...}.
var stateScript = redis.NewScript(prelude + `
local now = now_ms()
reap(now)
local spent, held, calls = money()
local out = {tostring(now), spent, held, calls}
for _, r in ipairs(redis.call('LRANGE', K_hist, 0, -1)) do out[#out + 1] = r end
return out
`)

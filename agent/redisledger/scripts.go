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
// A script's arguments come packed in ARGV[1] (see packer in pack.go),
// read with one struct.unpack: a string is a 4-byte length and its bytes
// (I4c0), a number a double (d). Each Lua string a call makes costs Redis
// its allocation and its hash, and each argument of FCALL a Redis object
// too: one packed argument makes only the strings the script needs.
// Every packed argument starts with the epoch the worker knows ("" for
// none), the highest ver it has seen, the epoch to create the scope with
// (format A). Every reply is one string packed the same way (see head):
// the epoch, then ver, spent (limbs), held (limbs), calls and four
// numbers the script gives, as doubles, then a string to its end; the
// state script returns it as the first element of an array. One string is
// cheaper for Redis to reply than an array of values.
const prelude = `
-- The library functions used, as locals: a global is looked up by name
-- on every use (through the library's environment). They are bound by
-- the first call (see init): a library's loading code sees none of them.
local sfind, ssub, sfmt, smatch, sgmatch, sbyte
local floor, mmin, spack, sunpack, tconcat
local tonum, unpk, rcall

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

-- clock returns Redis's time in ms.
local function clock()
  local t = rcall('TIME')
  return t[1] * 1000 + floor(t[2] / 1000)
end

-- ms is a time in ms as text.
local function ms(t) return sfmt('%d', t) end

-- M_* are the scope's counters as this script reads and changes them
-- (see the field c); P the fields it changed (false: deleted), written by
-- save; C the fields read for it (false: absent). With a library of
-- functions they are kept between calls (init clears P and C; the lists
-- EX, SET, DEL and the reply R below are reused, filled up to a count),
-- so that a call allocates as few Lua objects as it can: each costs
-- 0.1-0.2 µs of Redis CPU here, with its share of the garbage collector.
local M_epoch, M_ver, M_s1, M_s0, M_h1, M_h0, M_calls, M_seq, M_n, M_lx, M_t, M_xo, M_xn, M_xt
local P, C, changed, dirty = {}, {}, false, false

-- get reads field f as this script left it.
local function get(f)
  local v = P[f]
  if v == nil then v = C[f] end
  if v == nil then
    v = rcall('HGET', S, f)
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
    local v = rcall('HMGET', S, unpk(fs, i, mmin(i + 3999, #fs)))
    for _, x in ipairs(v) do out[#out + 1] = x end
  end
  return out
end

-- retire notes the epoch this worker knows among those the scope had
-- before it was lost (field retired, space-separated), so that after an
-- operator's Recover the worker is refused without marking the scope
-- lost again.
local function retire(retired)
  if known == '' or sfind(' ' .. (retired or '') .. ' ', ' ' .. known .. ' ', 1, true) then return end
  local l = known
  if retired then l = retired .. ' ' .. known end
  rcall('HSET', S, 'retired', l)
end

-- lose marks the scope lost, for every worker, and fails the script.
local function lose(why, idle)
  rcall('HSET', S, 'lost', why)
  retire(rcall('HGET', S, 'retired') or nil)
  if idle > 0 then rcall('PEXPIRE', S, idle) end
  return redis.error_reply('redisledger: state lost: ' .. why)
end

local NONE = 1e15

-- The counters are 13 little-endian doubles (integers below 2^53, so
-- exact): struct converts them in C, ten times faster than parsing and
-- formatting decimal text in Lua.
local CF = '<ddddddddddddd'

local function unpackc(c)
  if not c or #c ~= 104 then return false end
  M_ver, M_s1, M_s0, M_h1, M_h0, M_calls, M_seq, M_n, M_lx, M_t, M_xo, M_xn, M_xt = sunpack(CF, c)
  return true
end

local function packc()
  return spack(CF, M_ver, M_s1, M_s0, M_h1, M_h0, M_calls, M_seq, M_n, M_lx, M_t, M_xo, M_xn, M_xt)
end

local OLDER = 'redisledger: the scope was written by an older version of redisledger'

-- EX lists the fields a script reads with the scope's own (see open).
local EX = {}

-- open checks the scope against what this worker knows and loads M_*; it
-- reads the fields EX[1..nx] too, into C. It returns an error reply, or
-- nil. A scope that is not there is created (its writes made by save).
local function open(idle, nx)
  local v = rcall('HMGET', S, 'epoch', 'c', 'lost', unpk(EX, 1, nx))
  if v[3] then
    retire(rcall('HGET', S, 'retired') or nil)
    return redis.error_reply('redisledger: state lost: ' .. v[3])
  end
  for i = 1, nx do C[EX[i]] = v[3 + i] end
  if not v[1] then
    if known ~= '' then
      return lose('the scope ' .. known .. ' vanished (Redis restarted without its data, evicted or expired it)', idle)
    end
    if v[2] then
      return lose('the epoch of the scope is missing', idle)
    end
    if rcall('EXISTS', KS[2], KS[3]) > 0 then
      return lose('the scope hash is missing and its other keys are not', idle)
    end
    M_ver, M_s1, M_s0, M_h1, M_h0, M_calls, M_seq, M_n, M_lx, M_t, M_xo, M_xn, M_xt = 0, 0, 0, 0, 0, 0, 0, 0, NONE, 0, 0, 0, 0
    M_epoch = fresh
    put('epoch', fresh)
    dirty = true
    return nil
  end
  if not v[2] then
    local o = rcall('HMGET', S, 'm', 'spent')
    if o[2] then
      return redis.error_reply(OLDER .. ', which kept money as decimal text: finish it with that version')
    end
    if o[1] then
      return redis.error_reply(OLDER .. ' (layout 1: three keys per scope): finish it with that version')
    end
  end
  if not unpackc(v[2]) then
    return lose('the counters of the scope are missing or damaged', idle)
  end
  M_epoch = v[1]
  if known ~= '' and v[1] ~= known then
    local retired = rcall('HGET', S, 'retired')
    if retired and sfind(' ' .. retired .. ' ', ' ' .. known .. ' ', 1, true) then
      return redis.error_reply('redisledger: state lost: the scope ' .. known .. ' was lost and an operator recovered it as ' .. v[1] .. ': this worker used it before; restart it')
    end
    return lose('the scope ' .. known .. ' was replaced by ' .. v[1], idle)
  end
  if M_ver < seen then
    return lose('the scope went back to version ' .. M_ver .. ' after a worker saw version ' .. seen .. ' (Redis restarted from an older snapshot or lost writes)', idle)
  end
  return nil
end

-- save writes the script's changes: the fields in P and, when the money
-- or the history changed, the counters with the next version (or the
-- counters alone, when only lx, t or the ended queue changed: dirty).
-- When now is given and the key's expiry is due for extension (at most
-- every idle/16), it extends it: the scope expires between 15/16 of idle
-- and idle after its last write.
local SET, DEL = {}, {}
local function save(idle, now)
  local ext = false
  if idle > 0 and now and (changed or dirty) and now - M_t >= idle / 16 then
    M_t, dirty, ext = now, true, true
  end
  if changed then M_ver = M_ver + 1 end
  if changed or dirty then P.c = packc() end
  local ns, nd = 0, 0
  for f, v in pairs(P) do
    if v then SET[ns + 1], SET[ns + 2], ns = f, v, ns + 2 else nd = nd + 1; DEL[nd] = f end
    P[f] = nil
  end
  if ns > 0 then rcall('HSET', S, unpk(SET, 1, ns)) end
  if nd > 0 then rcall('HDEL', S, unpk(DEL, 1, nd)) end
  if ext then rcall('PEXPIRE', S, idle) end
end

-- head returns the reply: the epoch, ver, spent (limbs), held (limbs),
-- calls and the numbers a, b, c, d (0 when nil), then the string tail,
-- packed in one string (see decodeHead in store.go).
local HF = '<I4c0ddddddddddc0'
local function head(a, b, c, d, tail)
  return spack(HF, #M_epoch, M_epoch, M_ver, M_s1, M_s0, M_h1, M_h0, M_calls, a or 0, b or 0, c or 0, d or 0, tail or '')
end

local function less(ah, al, bh, bl, what)
  local h, l = sub(ah, al, bh, bl)
  if not h then error('redisledger: state lost: ' .. what .. ' would be negative') end
  return h, l
end

-- unhold takes amount (limbs as text) off the money held.
local function unhold(ah, al)
  M_h1, M_h0 = less(M_h1, M_h0, tonum(ah), tonum(al), 'the money held')
end

-- uncharge takes a charge (limbs as text) off the money spent.
local function uncharge(ah, al)
  M_s1, M_s0 = less(M_s1, M_s0, tonum(ah), tonum(al), 'the money spent')
end

local function spend(ah, al)
  M_s1, M_s0 = add(M_s1, M_s0, tonum(ah), tonum(al))
end

-- held parses a reservation record: amount limbs, started, lease expiry
-- when it is a hold.
local function held(r)
  return smatch(r or '', '^h (%d+) (%d+) (%d) (%d+)$')
end

-- over parses an ended record: state, cost limbs, end time, nonce.
local function over(r)
  return smatch(r or '', '^(%d) (%d+) (%d+) (%d+) ?(.*)$')
end

-- ended records how reservation tk ended, for its retries, and queues it
-- for forgetting after the retention.
local function ended(tk, state, cost, nonce, nows)
  put('r:' .. tk, state .. ' ' .. cost .. ' ' .. nows .. ' ' .. nonce)
  put(sfmt('x:%d', M_xn), nows .. ' ' .. tk)
  if M_xo == M_xn then M_xt = tonum(nows) end
  M_xn = M_xn + 1
  dirty = true
end

-- unlist removes token tk from lease shard field h.
local function unlist(h, tk)
  local l = get(h) or ''
  -- an empty shard stays, empty: no HDEL (16 fields at most)
  if l == tk then put(h, ''); return end
  -- the first occurrence of tk between spaces (or the ends of l)
  local n, i = #tk, 0
  repeat
    i = sfind(l, tk, i + 1, true)
    if not i then return end
  until (i == 1 or sbyte(l, i - 1) == 32) and (i + n > #l or sbyte(l, i + n) == 32)
  if i == 1 then put(h, ssub(l, n + 2))
  else put(h, ssub(l, 1, i - 2) .. ssub(l, i + n)) end
end

local function list(h, tk)
  local l = get(h)
  if l and l ~= '' then l = l .. ' ' .. tk else l = tk end
  put(h, l)
end

-- lease notes that a lease runs until until_ms.
local function lease(until_ms)
  if until_ms < M_lx then
    M_lx = until_ms
    dirty = true
  end
end

-- reap gives back the holds whose lease expired by now, or charges them
-- when their call started (reading the lease shards only when one may
-- have expired: field lx), and forgets up to 16 ended reservations older
-- than keep_ms.
local function reap(now, keep_ms)
  if now >= M_lx then
    local hs = {}
    for i = 0, 15 do hs[i + 1] = 'H' .. i end
    local ls = rcall('HMGET', S, unpk(hs))
    local tks, rs, at = {}, {}, {}
    for i, l in ipairs(ls) do
      if l then
        if C[hs[i]] == nil then C[hs[i]] = l end
        for tk in sgmatch(get(hs[i]) or '', '%S+') do
          tks[#tks + 1] = tk; rs[#rs + 1] = 'r:' .. tk; at[#at + 1] = hs[i]
        end
      end
    end
    local lx = NONE
    if #tks > 0 then
      local v = hmget(rs)
      for i, tk in ipairs(tks) do
        local a1, a0, st, exp = held(P[rs[i]] or v[i])
        if a1 and tonum(exp) > now then
          lx = mmin(lx, tonum(exp))
        elseif a1 then
          unhold(a1, a0)
          if st == '1' then
            spend(a1, a0)
            ended(tk, '4', a1 .. ' ' .. a0, '', ms(now))
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
    M_lx = lx
    dirty = true
  end
  if keep_ms > 0 and M_xo < M_xn and ((M_xt > 0 and now - keep_ms >= M_xt) or (M_xt == 0 and M_ver % 8 == 0)) then
    local fs = {}
    for k = M_xo, mmin(M_xo + 15, M_xn - 1) do fs[#fs + 1] = sfmt('x:%d', k) end
    local xs = rcall('HMGET', S, unpk(fs))
    local tks, ts = {}, {}
    M_xt = 0
    for i, x in ipairs(xs) do
      local t, tk = smatch(x or '', '^(%d+) (.+)$')
      if t and tonum(t) > now - keep_ms then M_xt = tonum(t); break end
      put(fs[i], false)
      M_xo = M_xo + 1
      if tk and P['r:' .. tk] == nil then tks[#tks + 1] = tk; ts[#ts + 1] = t end
    end
    dirty = true
    if #tks > 0 then
      local rs = {}
      for i, tk in ipairs(tks) do rs[i] = 'r:' .. tk end
      local v = rcall('HMGET', S, unpk(rs))
      for i, r in ipairs(v) do
        local _, _, _, e = over(r)
        -- a record that ended again later is forgotten by its later entry
        if e == ts[i] then put(rs[i], false) end
      end
    end
  end
end

-- redundant reports whether the stored entry old is made redundant by a
-- new entry of fingerprint fp, outcome o, result reference ref and goal.
local function redundant(old, fp, o, ref, goal)
  if old.fp ~= fp or old.o ~= o then return false end
  if o == 'success' then
    return old.goal == goal and (ref ~= '' or old.ref == '')
  end
  return o == 'transient_failure'
end

-- rank is the eviction class of an entry (0 is evicted first).
local function rank(o, ref)
  if o == 'transient_failure' then return 0 end
  if o == 'success' and ref == '' then return 1 end
  if o == 'success' then return 2 end
  return 3
end

-- QN names the queue of each eviction class; CD is its digit, NL a line
-- break and its digit.
local QN, CD, NL = {[0] = 'q0', 'q1', 'q2', 'q3'}, {[0] = '0', '1', '2', '3'}, {[0] = '\n0', '\n1', '\n2', '\n3'}

-- dropnth removes the j-th occurrence of bucket b from queue field q.
local function dropnth(q, b, j)
  local out, k = {}, 0
  for x in sgmatch(get(q) or '', '%S+') do
    if x == b then
      k = k + 1
      if k ~= j then out[#out + 1] = x end
    else
      out[#out + 1] = x
    end
  end
  put(q, tconcat(out, ' '))
end

-- unline returns the lines l without the first of class c (its first
-- byte), or nil when there is none.
local function unline(l, c)
  local i = 1
  if sbyte(l, 1) ~= 48 + c then
    i = sfind(l, NL[c], 1, true)
    if not i then return nil end
    i = i + 1
  end
  local j = sfind(l, '\n', i, true)
  if i == 1 then
    if j then return ssub(l, j + 1) end
    return ''
  end
  if j then return ssub(l, 1, i - 2) .. ssub(l, j) end
  return ssub(l, 1, i - 2)
end

-- evict drops the oldest entry of the queue of class vc, whose text is
-- vq (not empty), and returns the queue left.
local function evict(vc, vq)
  local sp = sfind(vq, ' ', 1, true)
  local victim, rest = vq, ''
  if sp then victim, rest = ssub(vq, 1, sp - 1), ssub(vq, sp + 1) end
  local fv = 'f:' .. victim
  local l = unline(get(fv) or '', vc)
  if l then put(fv, l) end
  return rest
end

-- record appends the entry of fingerprint fp, outcome o, result
-- reference ref and goal hash goal (pre: its JSON without the time and
-- the closing brace) to bucket b, stamped nows, under the retention rules
-- of agent.Ledger: drop the entries of its fingerprint it makes
-- redundant, then, while there are more than max, evict the oldest of the
-- least useful class other than itself. It reads the entries of its
-- bucket and the bucket of one evicted entry (its bucket and the queues
-- come with open).
local function record(pre, fp, o, ref, goal, b, nows, max)
  local fb, cls = 'f:' .. b, rank(o, ref)
  local lines = get(fb) or ''
  if lines ~= '' and sfind(lines, fp, 1, true) then
    local keep, gone, count = {}, {}, {0, 0, 0, 0}
    for line in sgmatch(lines, '[^\n]+') do
      local c = tonum(ssub(line, 1, 1))
      count[c + 1] = count[c + 1] + 1
      if sfind(line, fp, 1, true) and redundant(cjson.decode(ssub(line, 2)), fp, o, ref, goal) then
        gone[#gone + 1] = {c, count[c + 1]}
        M_n = M_n - 1
      else
        keep[#keep + 1] = line
      end
    end
    if #gone > 0 then
      lines = tconcat(keep, '\n')
      for i = #gone, 1, -1 do dropnth(QN[gone[i][1]], b, gone[i][2]) end
    end
  end
  M_seq = M_seq + 1
  if lines == '' then
    put(fb, CD[cls] .. pre .. ',"at":"' .. nows .. '","n":' .. ms(M_seq) .. '}')
  else
    put(fb, lines .. '\n' .. CD[cls] .. pre .. ',"at":"' .. nows .. '","n":' .. ms(M_seq) .. '}')
  end
  local qc = QN[cls]
  local q = get(qc)
  changed = true
  if M_n == max then
    -- Full: one entry in, one out (the usual case). The victim is the
    -- oldest entry of the lowest class that had one before this entry
    -- (which is the newest of its class).
    for r = 0, 3 do
      local vq = get(QN[r])
      if vq and vq ~= '' then
        local rest = evict(r, vq)
        if r == cls then
          if rest ~= '' then put(qc, rest .. ' ' .. b) else put(qc, b) end
        else
          put(QN[r], rest)
          if q and q ~= '' then put(qc, q .. ' ' .. b) else put(qc, b) end
        end
        return
      end
    end
  end
  if q and q ~= '' then put(qc, q .. ' ' .. b) else put(qc, b) end
  M_n = M_n + 1
  while M_n > max do
    local vc, vq
    for r = 0, 3 do
      local x = get(QN[r])
      if x and x ~= '' and (r ~= cls or sfind(x, ' ', 1, true)) then
        vc, vq = r, x
        break
      end
    end
    if not vc then break end
    put(QN[vc], evict(vc, vq))
    M_n = M_n - 1
  end
end

-- A is the format of the arguments every script starts with: the epoch
-- the worker knows, the highest version it saw, the epoch it would create
-- the scope with, and 1 when the call must write (the worker waits for
-- replicas after it: WAIT covers the writes of its own connection, so a
-- call that wrote nothing, such as a retried reservation, would have
-- nothing to wait for) or 0.
local A = '<I4c0dI4c0d'

-- args takes the arguments every script starts with and returns the rest.
local function args(k, s, f, w, ...)
  known, seen, fresh = k, s, f
  if w == 1 then dirty = true end
  return ...
end

-- init starts a call: its keys, nothing read or changed (each script
-- then unpacks its arguments, see args).
local function init(keys)
  if not sfind then
    sfind, ssub, sfmt, smatch, sgmatch, sbyte = string.find, string.sub, string.format, string.match, string.gmatch, string.byte
    floor, mmin, spack, sunpack, tconcat = math.floor, math.min, struct.pack, struct.unpack, table.concat
    tonum, unpk = tonumber, unpack
  end
  KS, S, rcall = keys, keys[1], redis.call
  for f in pairs(P) do P[f] = nil end
  for f in pairs(C) do C[f] = nil end
  changed, dirty = false, false
end
`

// reserveScript: after A, token, lease shard, amount (two limbs), limit
// (two limbs, -1 -1 for none), max calls (0 for none), lease ms, idle ms,
// started (0|1), keep ms, the fingerprint's bucket field ("" for none).
// The lease shard is its field's name (H<s>). Reply:
// head with 1 when held (or already held), 0 when the limits do not
// hold, the clock in ms, 0, 0, then the lines of the bucket ("" for
// none).
var reserveScript = newScript("reserve", `
local tk, sh, a1, a0, l1, l0, max_calls, lease_ms, idle, started, keep, fb = args(sunpack(A .. 'I4c0I4c0dddddddddI4c0', ARGV[1]))
local rf = 'r:' .. tk
EX[1], EX[2] = rf, sh
local nx = 2
if fb ~= '' then EX[3] = fb; nx = 3 end
local bad = open(idle, nx)
if bad then return bad end
local now = clock()
reap(now, keep)
local r = get(rf)
local ok = 1
if r and not held(r) then
  save(idle, now)
  return redis.error_reply('redisledger: reservation ended: ' .. tk)
end
if not r then
  local t1, t0 = add(M_s1, M_s0, M_h1, M_h0)
  t1, t0 = add(t1, t0, a1, a0)
  if ((a1 > 0 or a0 > 0) and l1 >= 0 and not le(t1, t0, l1, l0))
    or (max_calls > 0 and M_calls + 1 > max_calls) then
    ok = 0
  else
    M_h1, M_h0 = add(M_h1, M_h0, a1, a0)
    M_calls = M_calls + 1
    local exp = now + lease_ms
    put(rf, sfmt('h %d %d %d %d', a1, a0, started, exp))
    list(sh, tk)
    lease(exp)
    changed = true
  end
end
save(idle, now)
local lines = ''
if fb ~= '' then lines = get(fb) or '' end
return head(ok, now, 0, 0, lines)
`)

// cancelScript: after A, token, lease shard field, idle ms, keep ms. Withdraws
// the hold and its call; gives back a charge made at lease expiry. Reply:
// head.
var cancelScript = newScript("cancel", `
local tk, sh, idle, keep = args(sunpack(A .. 'I4c0I4c0dd', ARGV[1]))
EX[1], EX[2] = 'r:' .. tk, sh
local bad = open(idle, 2)
if bad then return bad end
local now = clock()
reap(now, keep)
local r = get('r:' .. tk)
local a1, a0 = held(r)
if a1 then
  unhold(a1, a0)
  M_calls = M_calls - 1
  unlist(sh, tk)
  ended(tk, '3', '0 0', '', ms(now))
  changed = true
else
  local st, c1, c0 = over(r)
  if st == '4' then
    uncharge(c1, c0)
    M_calls = M_calls - 1
    ended(tk, '3', '0 0', '', ms(now))
    changed = true
  end
end
save(idle, now)
return head()
`)

// settleScript: after A, token, lease shard field, cost (two limbs), keep ms,
// entry JSON without its closing brace ("" for none), max entries, idle
// ms, nonce, the entry's bucket, fingerprint, outcome, result reference
// and goal hash (as in its JSON). Reply: head, then state (0 settled, 1
// settled late, 2 repeat of an earlier settlement), late (0|1), cost
// counted (two limbs).
var settleScript = newScript("settle", `
local tk, sh, c1, c0, keep, pre, max, idle, nonce, b, fp, o, ref, goal = args(sunpack(A .. 'I4c0I4c0dddI4c0ddI4c0I4c0I4c0I4c0I4c0I4c0', ARGV[1]))
local rf = 'r:' .. tk
EX[1], EX[2] = rf, sh
local nx = 2
if pre ~= '' then
  EX[3], EX[4], EX[5], EX[6], EX[7], nx = 'f:' .. b, 'q0', 'q1', 'q2', 'q3', 7
end
local bad = open(idle, nx)
if bad then return bad end
local now = clock()
reap(now, keep)
local r = get(rf)
local late, lates = 1, '1'
local a1, a0 = held(r)
if a1 then
  unhold(a1, a0)
  unlist(sh, tk)
  late, lates = 0, '0'
elseif r then
  local st, c1, c0, _, n = over(r)
  if st == '0' or st == '1' then
    save(idle, now)
    if n == nonce then return head(tonum(st), tonum(st), tonum(c1), tonum(c0)) end
    return head(2, tonum(st), tonum(c1), tonum(c0))
  end
  if st == '4' then uncharge(c1, c0) end
end
spend(c1, c0)
local nows = ms(now)
ended(tk, lates, sfmt('%d %d', c1, c0), nonce, nows)
if pre ~= '' then record(pre, fp, o, ref, goal, b, nows, max) end
changed = true
save(idle, now)
return head(late, late, c1, c0)
`)

// releaseScript: after A, token, lease shard field, idle ms, keep ms. Frees the
// hold without spending; gives back a charge made at lease expiry.
// Reply: head.
var releaseScript = newScript("release", `
local tk, sh, idle, keep = args(sunpack(A .. 'I4c0I4c0dd', ARGV[1]))
EX[1], EX[2] = 'r:' .. tk, sh
local bad = open(idle, 2)
if bad then return bad end
local now = clock()
reap(now, keep)
local r = get('r:' .. tk)
local a1, a0 = held(r)
if a1 then
  unhold(a1, a0)
  unlist(sh, tk)
  ended(tk, '3', '0 0', '', ms(now))
  changed = true
else
  local st, c1, c0 = over(r)
  if st == '4' then
    uncharge(c1, c0)
    ended(tk, '3', '0 0', '', ms(now))
    changed = true
  end
end
save(idle, now)
return head()
`)

// renewScript: after A, lease ms, idle ms, keep ms; the reservation
// tokens in ARGV[2..]. Extends the leases of those still held and, when there was
// one, the expiry of the scope's key. Reply: head, then how many were
// held.
var renewScript = newScript("renew", `
local lease_ms, idle, keep = args(sunpack(A .. 'ddd', ARGV[1]))
local nx = 0
for i = 2, #ARGV do nx = nx + 1; EX[nx] = 'r:' .. ARGV[i] end
local bad = open(idle, nx)
if bad then return bad end
local now = clock()
reap(now, keep)
local until_ms, n = now + lease_ms, 0
for i = 2, #ARGV do
  local a1, a0, st = held(get('r:' .. ARGV[i]))
  if a1 then
    put('r:' .. ARGV[i], 'h ' .. a1 .. ' ' .. a0 .. ' ' .. st .. ' ' .. ms(until_ms))
    n = n + 1
  end
end
if n > 0 then
  lease(until_ms)
  -- a renewal is a write: it keeps the scope alive while a call runs
  dirty = true
end
save(idle, now)
return head(n)
`)

// appendScript: after A, entry JSON without its closing brace, max
// entries, idle ms, the entry's bucket, fingerprint, outcome, result
// reference and goal hash. Reply: head.
var appendScript = newScript("append", `
local pre, max, idle, b, fp, o, ref, goal = args(sunpack(A .. 'I4c0ddI4c0I4c0I4c0I4c0I4c0', ARGV[1]))
EX[1], EX[2], EX[3], EX[4], EX[5] = 'f:' .. b, 'q0', 'q1', 'q2', 'q3'
local bad = open(idle, 5)
if bad then return bad end
local now = clock()
record(pre, fp, o, ref, goal, b, ms(now), max)
save(idle, now)
return head()
`)

// stateScript: after A, what: a bucket, "" for none, "*" for every
// entry; keep ms, idle ms. Reply: an array of head, now ms (a number),
// then the lines of the bucket, or of every bucket of the history (one
// string each).
var stateScript = newScript("state", `
local what, keep, idle = args(sunpack(A .. 'I4c0dd', ARGV[1]))
local nx = 0
if what == '*' then EX[1], EX[2], EX[3], EX[4], nx = 'q0', 'q1', 'q2', 'q3', 4 elseif what ~= '' then EX[1], nx = 'f:' .. what, 1 end
local bad = open(idle, nx)
if bad then return bad end
local now = clock()
reap(now, keep)
save(idle, now)
local out = {head(), now}
if what ~= '*' then
  if what ~= '' then out[#out + 1] = get('f:' .. what) or '' end
  return out
end
local seen, fs = {}, {}
for r = 0, 3 do
  for b in sgmatch(get(QN[r]) or '', '%S+') do
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

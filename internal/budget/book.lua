-- Books a send slot of one sender number (see budget.go for the keys).
-- It follows now.lua.
-- ARGV: now, cost (parts), interval (µs between parts at the pace),
-- allowed (parts a second may hold, this send's included), over (a
-- trial: the second may hold up to this many, once; 0: none), hold (µs
-- this send's parts count), guard (µs after the room is there that a
-- send held for it leaves), ttl (ms the keys outlive the booking).
-- Returns: the wait from now (µs, a string), the parts booked in the
-- second before the slot, 1 for a trial's send, the shared limit ("" for
-- none) and its version.
local h, c, r = KEYS[1], KEYS[2], KEYS[3]
local cost, interval, allowed, over = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local hold, guard, ttl = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local st = redis.call('HMGET', h, 'parts', 'next', 'reach', 'base', 'rest', 'limit', 'version')
local parts = tonumber(st[1] or '0')
local nxt = tonumber(st[2] or '0')
local reach = tonumber(st[3] or '0')
local base = tonumber(st[4] or '0')
local rest = tonumber(st[5] or '0')

-- The parts booked that still count at t: those after the latest booking
-- whose parts, and all before it, no longer do (reach only grows).
local function held(t)
  local g = redis.call('ZREVRANGEBYSCORE', r, fmt(t), '-inf', 'LIMIT', 0, 1)
  if g[1] then return parts - tonumber(g[1]) end
  return parts - base
end

local t = math.max(now, nxt, rest)
local trial = 0
if over > allowed and now >= rest then
  -- A trial's send leaves at once, outside the pace, while it takes the
  -- second past what the limit allows but not past what the trial tests.
  local n = held(now)
  if n + cost > allowed and n + cost <= over then t, trial = now, 1 end
end
if trial == 0 then
  -- Room: the second before the slot may hold allowed - cost parts (none
  -- for a send larger than a second allows); the booking that leaves
  -- that many after it must have stopped counting.
  local keep = math.max(allowed - cost, 0)
  if parts - keep > base then
    local b = redis.call('ZRANGEBYSCORE', c, fmt(parts - keep), '+inf', 'LIMIT', 0, 1)
    if b[1] then
      local gone = tonumber(string.match(b[1], ':(%d+)$'))
      if gone > t then t = gone + guard end
    end
  end
  nxt = t + cost * interval
end
local seen = held(t)

parts = parts + cost
reach = math.max(reach, t + hold)
redis.call('ZADD', c, fmt(parts), fmt(parts) .. ':' .. fmt(reach))
redis.call('ZADD', r, fmt(reach), fmt(parts))
-- Forget bookings that stopped counting more than two seconds ago, and
-- keep in base what held needs of them.
local cut = fmt(now - 2000000)
local old = redis.call('ZREVRANGEBYSCORE', r, cut, '-inf', 'LIMIT', 0, 1)
if old[1] then
  base = tonumber(old[1])
  redis.call('ZREMRANGEBYSCORE', r, '-inf', cut)
  redis.call('ZREMRANGEBYSCORE', c, '-inf', old[1])
end
redis.call('HSET', h, 'parts', fmt(parts), 'next', fmt(nxt), 'reach', fmt(reach), 'base', fmt(base))
for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, ttl) end
return {fmt(t - now), seen, trial, st[6] or '', st[7] or '0'}

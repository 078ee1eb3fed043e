-- Shares what a process learned of a sender number (see budget.go).
-- It follows now.lua. ARGV: now, the limit it is now sent at
-- ("" for unchanged), a rest from now (µs; 0 for none), ttl (ms).
-- Returns the version of the shared limit, later than any before it.
local h = KEYS[1]
local limit, rest, ttl = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local version = tonumber(redis.call('HGET', h, 'version') or '0')
if limit ~= '' then
  version = math.max(now, version + 1)
  redis.call('HSET', h, 'limit', limit, 'version', fmt(version))
end
if rest > 0 then
  local was = tonumber(redis.call('HGET', h, 'rest') or '0')
  redis.call('HSET', h, 'rest', fmt(math.max(was, now + rest)))
end
redis.call('PEXPIRE', h, ttl)
return fmt(version)

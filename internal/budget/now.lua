-- The start of every script: fmt writes an integer whole (Lua's own
-- tostring rounds µs instants to 14 digits), and now is ARGV[1], µs on
-- the caller's clock, or the server's when it is 0.
local function fmt(x) return string.format('%d', x) end
local now = tonumber(ARGV[1])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

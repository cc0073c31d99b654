-- A guarded write of one shared hash, decided on the server in one step. The same rule, in
-- Python, is craft_apps.shared_store.write_wins (tests run every case through both).
--
-- KEYS[1]   the hash
-- ARGV[1]   the time field that guards the write
-- ARGV[2]   the new time, Unix ms
-- ARGV[3]   the minimum gap, ms: the stored time plus it must not be after the new time
-- ARGV[4]   the TTL to set, ms
-- ARGV[5]   the ETag the hash must hold for the write to happen, '' for none
-- ARGV[6..] field, value, field, value, ...
-- Returns 1 when written, 0 when what is stored wins.
local key = KEYS[1]
local kind = redis.call('TYPE', key)['ok']
local stored_time, stored_etag = false, false
if kind == 'hash' then
  local stored = redis.call('HMGET', key, ARGV[1], 'etag')
  stored_time, stored_etag = stored[1], stored[2]
end
-- Only a plain integer of at most 15 digits is a time: exact as a Lua number, and anything
-- else is garbage that must not block the write that replaces it.
if stored_time then
  local digits = string.match(stored_time, '^%-?(%d+)$')
  if digits and #digits <= 15 and tonumber(stored_time) + tonumber(ARGV[3]) > tonumber(ARGV[2]) then
    return 0
  end
end
if ARGV[5] ~= '' and stored_etag ~= ARGV[5] then
  return 0
end
if kind ~= 'hash' and kind ~= 'none' then
  redis.call('DEL', key)
end
redis.call('HSET', key, unpack(ARGV, 6))
redis.call('PEXPIRE', key, ARGV[4])
return 1

-- A guarded write of one shared hash, decided on the server in one step. The same rule, in
-- Python, is craft_apps.fleet.guarded_writes.decide_write, whose time guard is craft_apps.kernel.domain.newer_wins
-- (tests run every case through the script, the WATCH path and decide_write).
--
-- KEYS[1]   the hash
-- ARGV[1]   the time field that guards the write
-- ARGV[2]   the new time, Unix ms
-- ARGV[3]   the minimum gap, ms: the stored time plus it must not be after the new time
-- ARGV[4]   the TTL to set, ms
-- ARGV[5]   the ETag the hash must hold for the write to happen, '' for none
-- ARGV[6]   '1' for a full write (a whole fetch: it may replace a hash of another format)
-- ARGV[7]   the format version the write is in (the value of its 'v' field)
-- ARGV[8..] field, value, field, value, ...
-- Returns 1 when written, 0 when what is stored wins; an error (nothing written) when the
-- Redis user may not run one of the writes.
local key, time_field, etag_needed = KEYS[1], ARGV[1], ARGV[5]
local full, version = ARGV[6] == '1', ARGV[7]
local kind = redis.call('TYPE', key)['ok']
local stored_version, stored_time, stored_etag = false, false, false
if kind == 'hash' then
  local stored = redis.call('HMGET', key, 'v', time_field, 'etag')
  stored_version, stored_time, stored_etag = stored[1], stored[2], stored[3]
end
if etag_needed ~= '' and stored_etag ~= etag_needed then
  return 0
end
-- A hash of another format (another or no 'v') means nothing to this version: its times guard
-- nothing, only a full write replaces it, and a partial write (a claim, a failure, a 304)
-- leaves its 'v' alone, so the foreign fields never become readable as ours.
local foreign = kind == 'hash' and stored_version ~= version
-- Only a plain integer of at most 15 digits is a time: exact as a Lua number, and anything
-- else is garbage that must not block the write that replaces it.
if kind == 'hash' and not foreign and stored_time then
  local digits = string.match(stored_time, '^%-?(%d+)$')
  if digits and #digits <= 15 and tonumber(stored_time) + tonumber(ARGV[3]) > tonumber(ARGV[2]) then
    return 0
  end
end
local replace = (kind ~= 'hash' and kind ~= 'none') or (foreign and full)
local hset = {'HSET', key}
for i = 8, #ARGV, 2 do
  if ARGV[i] ~= 'v' or not foreign or replace then
    hset[#hset + 1] = ARGV[i]
    hset[#hset + 1] = ARGV[i + 1]
  end
end
local writes = {hset, {'PEXPIRE', key, ARGV[4]}}
if replace then
  table.insert(writes, 1, {'DEL', key})
end
-- Redis runs a script without letting another command in, but it does not undo the writes a
-- script made before one of its commands failed. Of the ways a write can fail here, maxmemory
-- (OOM) and a read-only replica refuse only a script's first write, so they leave nothing
-- behind; an ACL is checked command by command, so a user allowed HSET but not PEXPIRE would
-- leave a hash that never expires, or one allowed DEL but not HSET an entry deleted. So ask
-- the ACL about every write before making the first (redis.acl_check_cmd, Redis 7 and later).
if redis.acl_check_cmd then
  for _, write in ipairs(writes) do
    if not redis.acl_check_cmd(unpack(write)) then
      return redis.error_reply('NOPERM this user may not run ' .. string.lower(write[1]) ..
        ' on the shared release key ' .. key .. '; nothing was written')
    end
  end
end
for _, write in ipairs(writes) do
  redis.call(unpack(write))
end
return 1

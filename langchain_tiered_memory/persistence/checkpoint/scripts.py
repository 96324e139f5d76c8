"""The checkpointers' Lua scripts: each write and each read of a thread is one script, so
it is atomic and one round trip (``base.py`` draws the layout they keep).
"""

from __future__ import annotations

__all__ = ["COPY", "DELETE", "DIGEST", "LOAD", "PUT", "PUT_WRITES", "READ_ALL"]

# Every script takes a thread's seven keys (ids, data, writes, wkeys, runs, blobs, refs)
# as KEYS.

# ARGV: ttl ms, member, record, run entry or "", packed refs or "", n, then n (blob field,
# value) pairs of the values this checkpoint gave a new version, then the blob fields it
# holds unchanged from an ancestor. If one of those is missing (the ancestor was written
# by a saver that stored values inline), nothing is written and the missing fields are
# returned, for the caller to send their values.
PUT = r"""
local n = tonumber(ARGV[6])
local missing = {}
for i = 7 + 2 * n, #ARGV do
  if redis.call('HEXISTS', KEYS[6], ARGV[i]) == 0 then missing[#missing + 1] = ARGV[i] end
end
if #missing > 0 then return missing end
for i = 7, 6 + 2 * n, 2 do redis.call('HSET', KEYS[6], ARGV[i], ARGV[i + 1]) end
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[7], ARGV[2], ARGV[5])
else
  redis.call('HDEL', KEYS[7], ARGV[2])
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[1], 0, ARGV[2])
if ARGV[4] ~= '' then redis.call('ZADD', KEYS[5], 0, ARGV[4]) end
local ttl = tonumber(ARGV[1])
if ttl > 0 then for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end end
return 1
"""

# ARGV: ttl ms, then (field, value, replace) triples.
# A regular write is kept if present (a retried task must not change what it wrote); a
# special one (error, interrupt, ...) replaces, as LangGraph's own savers do.
PUT_WRITES = r"""
for i = 2, #ARGV, 3 do
  if ARGV[i + 2] == '1' then
    redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
  else
    redis.call('HSETNX', KEYS[3], ARGV[i], ARGV[i + 1])
  end
  redis.call('ZADD', KEYS[4], 0, ARGV[i])
end
local ttl = tonumber(ARGV[1])
if ttl > 0 then for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end end
return 1
"""

# ARGV: ttl ms (0: no refresh), reader, mode, args.
# mode "latest": ARGV[4] is a namespace; "members": ARGV[4..] are members.
# The keys' clock restarts (ttl > 0) for any read when reader is "", else only if the
# thread's owner record (KEYS[8]) names the reader: another user's read, refused after
# this script, must not keep the owner's thread alive (issue 76 item 2).
# Returns {member, record, write fields, write values} per member that exists, and for a
# checkpoint with blobs also {packed refs, blob values}.
LOAD = r"""
local CHUNK = 1000
local members
if ARGV[3] == 'latest' then
  local ns = ARGV[4]
  members = redis.call('ZREVRANGEBYLEX', KEYS[1], '(' .. ns .. '\1', '[' .. ns .. '\0',
                       'LIMIT', 0, 1)
else
  members = {}
  for i = 4, #ARGV do members[#members + 1] = ARGV[i] end
end
local out = {}
for _, m in ipairs(members) do
  local rec = redis.call('HGET', KEYS[2], m)
  if rec then
    local fields = redis.call('ZRANGEBYLEX', KEYS[4], '[' .. m .. '\0', '(' .. m .. '\1')
    -- HMGET in chunks: unpack() of more than ~8,000 fields overflows Lua's stack
    local values = {}
    for i = 1, #fields, CHUNK do
      local got = redis.call('HMGET', KEYS[3], unpack(fields, i, math.min(i + CHUNK - 1, #fields)))
      for _, v in ipairs(got) do values[#values + 1] = v end
    end
    local refs = redis.call('HGET', KEYS[7], m)
    if refs then
      local names = cmsgpack.unpack(refs)
      local blobs = {}
      if #names > 0 then blobs = redis.call('HMGET', KEYS[6], unpack(names)) end
      out[#out + 1] = {m, rec, fields, values, refs, blobs}
    else
      out[#out + 1] = {m, rec, fields, values}
    end
  end
end
local ttl = tonumber(ARGV[1])
local reader = ARGV[2]
if ttl > 0 and #out > 0 and reader ~= '' then
  local kind = redis.call('TYPE', KEYS[8]).ok
  if kind ~= 'string' or redis.call('GET', KEYS[8]) ~= reader then ttl = 0 end
end
if ttl > 0 and #out > 0 then
  for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end
end
return out
"""

# ARGV: members. Per member, what says whether a delta walk's copy of it is still current
# (the same string as _digest): "<sha1 of the record>:<sha1 of its refs>:<number of its
# writes>:<sha1 of the sha1s of its writes, field and value>", or false if it is gone.
DIGEST = r"""
local out = {}
for i = 1, #ARGV do
  local m = ARGV[i]
  local rec = redis.call('HGET', KEYS[2], m)
  if rec then
    local refs = redis.call('HGET', KEYS[7], m) or ''
    -- the writes by content, not by count: a thread restored from a copy (delete_thread
    -- + copy_thread) by another process may hold as many writes with other values
    local fields = redis.call('ZRANGEBYLEX', KEYS[4], '[' .. m .. '\0', '(' .. m .. '\1')
    local parts = {}
    for j = 1, #fields, 1000 do
      local got = redis.call('HMGET', KEYS[3], unpack(fields, j, math.min(j + 999, #fields)))
      for q = 1, #got do
        parts[#parts + 1] = redis.sha1hex(fields[j + q - 1] .. '\0' .. (got[q] or ''))
      end
    end
    out[i] = redis.sha1hex(rec) .. ':' .. redis.sha1hex(refs) .. ':' .. #fields .. ':'
      .. redis.sha1hex(table.concat(parts))
  else
    out[i] = false
  end
end
return out
"""

# ARGV: mode, args. mode "members": delete those
# checkpoints and their writes; "run": ARGV[2] is a run id, delete its checkpoints.
# A blob the deleted checkpoints held goes too unless a checkpoint left still holds it
# (a scan of the thread's refs: deletes are maintenance, not per turn).
DELETE = r"""
local CHUNK = 1000
local members = {}
if ARGV[1] == 'run' then
  local r = ARGV[2]
  local entries = redis.call('ZRANGEBYLEX', KEYS[5], '[' .. r .. '\0', '(' .. r .. '\1')
  for _, e in ipairs(entries) do members[#members + 1] = string.sub(e, #r + 2) end
  redis.call('ZREMRANGEBYLEX', KEYS[5], '[' .. r .. '\0', '(' .. r .. '\1')
else
  for i = 2, #ARGV do members[#members + 1] = ARGV[i] end
end
local unheld, any = {}, false
for _, m in ipairs(members) do
  local refs = redis.call('HGET', KEYS[7], m)
  if refs then
    for _, f in ipairs(cmsgpack.unpack(refs)) do unheld[f] = true; any = true end
    redis.call('HDEL', KEYS[7], m)
  end
  redis.call('HDEL', KEYS[2], m)
  redis.call('ZREM', KEYS[1], m)
  local lo, hi = '[' .. m .. '\0', '(' .. m .. '\1'
  local fields = redis.call('ZRANGEBYLEX', KEYS[4], lo, hi)
  if #fields > 0 then
    for i = 1, #fields, CHUNK do
      redis.call('HDEL', KEYS[3], unpack(fields, i, math.min(i + CHUNK - 1, #fields)))
    end
    redis.call('ZREMRANGEBYLEX', KEYS[4], lo, hi)
  end
end
if any then
  local left = redis.call('HVALS', KEYS[7])
  for _, refs in ipairs(left) do
    for _, f in ipairs(cmsgpack.unpack(refs)) do unheld[f] = nil end
  end
  local gone = {}
  for f in pairs(unheld) do gone[#gone + 1] = f end
  for i = 1, #gone, CHUNK do
    redis.call('HDEL', KEYS[6], unpack(gone, i, math.min(i + CHUNK - 1, #gone)))
  end
end
return #members
"""

# The whole thread, atomically: {ids, data (flat field/value list), writes (flat), wkeys,
# runs, blobs (flat), refs (flat)}.
READ_ALL = r"""
return {redis.call('ZRANGE', KEYS[1], 0, -1), redis.call('HGETALL', KEYS[2]),
        redis.call('HGETALL', KEYS[3]), redis.call('ZRANGE', KEYS[4], 0, -1),
        redis.call('ZRANGE', KEYS[5], 0, -1), redis.call('HGETALL', KEYS[6]),
        redis.call('HGETALL', KEYS[7])}
"""

# KEYS: the target thread's seven keys. ARGV: ttl ms, then the source's contents as
# (kind index, member, value) triples: 1 = ids, 2 = data, 3 = writes, 4 = wkeys, 5 = runs,
# 6 = blobs, 7 = refs.
COPY = r"""
for i = 2, #ARGV, 3 do
  local k = tonumber(ARGV[i])
  if k == 2 or k == 3 or k >= 6 then
    redis.call('HSET', KEYS[k], ARGV[i + 1], ARGV[i + 2])
  else
    redis.call('ZADD', KEYS[k], 0, ARGV[i + 1])
  end
end
local ttl = tonumber(ARGV[1])
if ttl > 0 then for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end end
return 1
"""

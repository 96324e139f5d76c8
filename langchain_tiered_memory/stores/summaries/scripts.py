"""The summary store's Lua scripts: each write of a user's items is one script, so it is
atomic (items, vectors, the cache version, the watermark and the erasure fence together).
"""

from __future__ import annotations

__all__ = ["ADD", "CLEAR", "DELETE", "FENCE", "GET_ITEM", "REWRITE", "ROTATE", "UPDATE"]

ADD = """
if ARGV[1] ~= '' then
  local wm = redis.call('HGET', KEYS[3], 'watermark') or '0'
  if wm ~= ARGV[1] then return {-1, wm} end
  -- the erasure fence: 'f:' .. the era read before the messages were (absent: erased)
  if ARGV[8] ~= '' and 'f:' .. (redis.call('HGET', KEYS[3], 'era') or '') ~= ARGV[8] then
    return {-5, ''}
  end
end
local m = tonumber(ARGV[6])
local off = 8 + 2 * m
local n = (#ARGV - off) / 2
if n > 0 then
  if ARGV[5] ~= '' then
    local have = redis.call('HLEN', KEYS[1])
    if have + n > tonumber(ARGV[5]) then return {-3, tostring(have)} end
  end
  -- the vectors of one user come from one model: its size and its name are recorded with
  -- the first item; items stored before 0.2 have no name and keep none (see the README)
  local stored = redis.call('HLEN', KEYS[2]) > 0
  local d = redis.call('HGET', KEYS[3], 'dim')
  if stored and d and d ~= ARGV[3] then return {-2, d} end
  local model = redis.call('HGET', KEYS[3], 'model')
  if stored and model and model ~= ARGV[7] then return {-4, model} end
  if not stored or model then redis.call('HSET', KEYS[3], 'model', ARGV[7]) end
  redis.call('HSET', KEYS[3], 'dim', ARGV[3])
  redis.call('HSETNX', KEYS[3], 'gen', ARGV[4])
end
local first = redis.call('HINCRBY', KEYS[3], 'next_id', n) - n
for i = 0, n - 1 do
  redis.call('HSET', KEYS[1], first + i, ARGV[off + 1 + 2 * i])
  redis.call('HSET', KEYS[2], first + i, ARGV[off + 2 + 2 * i])
end
-- superseded items: their new JSON names the new item as @@NEW<k>@@ (k: its batch index)
local changed = false
for j = 0, m - 1 do
  local id = ARGV[9 + 2 * j]
  if redis.call('HEXISTS', KEYS[1], id) == 1 then
    local json = string.gsub(ARGV[10 + 2 * j], '@@NEW(%d+)@@', function(k)
      return tostring(first + tonumber(k))
    end)
    redis.call('HSET', KEYS[1], id, json)
    changed = true
  end
end
if changed then redis.call('HINCRBY', KEYS[3], 'gen', 1) end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[3], 'watermark', ARGV[2]) end
return {first, ''}
"""

# KEYS: meta, history. ARGV: a new era. The era is created by the first read for
# summarization of a user who has data, never for one with none: a forgotten user's
# summarizer reads '' and an erasure after this read deletes the era (or rotates it).
FENCE = """
if redis.call('EXISTS', KEYS[1], KEYS[2]) > 0 then
  redis.call('HSETNX', KEYS[1], 'era', ARGV[1])
end
return {redis.call('HGET', KEYS[1], 'watermark') or '0', redis.call('HGET', KEYS[1], 'era') or ''}
"""

ROTATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'era', ARGV[1]) end
return 1
"""

DELETE = """
local n = 0
for i = 1, #ARGV do
  n = n + redis.call('HDEL', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[2], ARGV[i])
end
if n > 0 then redis.call('HINCRBY', KEYS[3], 'gen', 1) end
return n
"""

CLEAR = """
local n = redis.call('HLEN', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[4])
redis.call('HDEL', KEYS[3], 'watermark', 'dim', 'model', 're_model')
redis.call('HSETNX', KEYS[3], 'gen', ARGV[1])
redis.call('HINCRBY', KEYS[3], 'gen', 1)
return n
"""

GET_ITEM = "return redis.call('HGET', KEYS[1], ARGV[1])"

# KEYS: items, vectors, meta. ARGV: id, the JSON read, the new JSON, the new vector, the
# embeddings model. Replaces one item in place if it is still what was read (0: it
# changed or went meanwhile; -1: the stored vectors are another model's).
UPDATE = """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
local model = redis.call('HGET', KEYS[3], 'model')
if model and model ~= ARGV[5] then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
redis.call('HINCRBY', KEYS[3], 'gen', 1)
return 1
"""

# KEYS: items, meta. ARGV: (id, the JSON read, the new JSON) triples. Rewrites each item
# still as it was read (its vector unchanged) and returns how many; the index generation
# moves, so every process reloads the records.
REWRITE = """
local n = 0
for i = 1, #ARGV, 3 do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])
    n = n + 1
  end
end
if n > 0 then redis.call('HINCRBY', KEYS[2], 'gen', 1) end
return n
"""

"""The scripts of ``RedisHistoryStore.retract``: read entries by absolute position, then
replace those that still hold what was read (the new forms are made in Python,
``codec.retractions``: a Lua JSON round trip would turn an empty list into an object).
"""

from __future__ import annotations

__all__ = ["READ_AT", "SWAP_AT"]

# The entries from each absolute position on (ARGV: count, then positions): nil where the
# position is trimmed or past the end. KEYS: history, meta.
READ_AT = """
local base = tonumber(redis.call('HGET', KEYS[2], 'hist_base') or '0')
local n = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV do
  local p = tonumber(ARGV[i])
  for j = 0, n - 1 do
    local entry = false
    if p + j >= base then entry = redis.call('LINDEX', KEYS[1], p + j - base) end
    out[#out + 1] = entry
  end
end
return out
"""

# Replace entries that still hold what was read (ARGV: position, expected, new, ...): an
# entry trimmed, forgotten or changed meanwhile is left as it is. KEYS: history, meta.
SWAP_AT = """
local base = tonumber(redis.call('HGET', KEYS[2], 'hist_base') or '0')
local swapped = 0
for i = 1, #ARGV, 3 do
  local index = tonumber(ARGV[i]) - base
  if index >= 0 and redis.call('LINDEX', KEYS[1], index) == ARGV[i + 1] then
    redis.call('LSET', KEYS[1], index, ARGV[i + 2])
    swapped = swapped + 1
  end
end
return swapped
"""

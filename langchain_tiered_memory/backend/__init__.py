"""Redis underneath: ``connection`` (``RedisConnection``: clients, pools, deadlines,
errors), ``server`` (``EmbeddedRedis``: the embedded server's lifecycle), ``compact``
(rewriting its files after an erasure) and ``keys`` (the one key builder). What opens the
stores on a connection is ``memory.opening``: it reaches up into the stores and
persistence, which a backend module may not.
"""

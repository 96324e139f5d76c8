"""Redis underneath: ``connection`` (``RedisConnection``: clients, pools, deadlines,
errors), ``server`` (``EmbeddedRedis``: the embedded server's lifecycle), ``compact``
(rewriting its files after an erasure), ``keys`` (the one key builder) and ``opening``
(a connection's Redis stores, saver and LangGraph store).
"""

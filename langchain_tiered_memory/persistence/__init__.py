"""LangGraph's persistence on plain Redis: ``checkpoint`` (``RedisSaver``,
``AsyncRedisSaver``) and ``store`` (``RedisStore``, ``AsyncRedisStore``: a ``BaseStore``).
"""

"""LangGraph's persistence on plain Redis: ``checkpoint`` (``RedisSaver``,
``AsyncRedisSaver``), ``store`` (``RedisStore``, ``AsyncRedisStore``: a ``BaseStore``) and
``messages`` (a thread's messages as batches on a ``DeltaChannel``, and the thread rebuilt
from a saver's writes).
"""

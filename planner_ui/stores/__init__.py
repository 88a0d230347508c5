"""The two stores every layer above the engine talks to, at the lowest level: SQL statements
written whole (sql) and the Redis client and its keys (redis_store). Neither reads nor writes
anything of its own: the services write through them and the selectors read through them."""

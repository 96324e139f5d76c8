"""Who is calling (``langgraph.json``: ``"auth"``), and whose threads they may touch.

``authenticate`` is the part an app replaces with its identity provider (verify a JWT,
ask a session store): here, bearer tokens from ``DEMO_TOKENS`` ("token=user,token=user").
:func:`~langchain_tiered_memory.deploy.protect_threads` adds what the memory needs: each
thread, assistant and cron stamped with its creator and every request filtered by it, the
store scoped to the user, a run (or an assistant) naming a user refused, and, given the
graph's memory, the owner's thread delete erasing the thread from the memory too.
"""

import os

# the graph's memory: the server runs this module and the graph's in one process (the
# server loads graph.py by its path, this import loads it once more by name: a second
# client of the same Redis, which is all the delete handler needs)
from graph import memory
from langgraph_sdk import Auth

from langchain_tiered_memory.deploy import protect_threads

TOKENS = dict(
    pair.split("=", 1) for pair in os.environ.get("DEMO_TOKENS", "").split(",") if "=" in pair
)

auth = Auth()


@auth.authenticate
async def authenticate(authorization: str | None) -> str:
    """The user id of a request's bearer token; 401 for none or an unknown one."""
    scheme, _, token = (authorization or "").partition(" ")
    user = TOKENS.get(token) if scheme.lower() == "bearer" else None
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Unknown or missing token.")
    return user


protect_threads(auth, memory=memory)

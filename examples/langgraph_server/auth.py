"""Who is calling (``langgraph.json``: ``"auth"``), and whose threads they may touch.

``authenticate`` is the part an app replaces with its identity provider (verify a JWT,
ask a session store): here, bearer tokens from ``DEMO_TOKENS`` ("token=user,token=user").
:func:`~langchain_tiered_memory.deploy.protect_threads` adds what the memory needs: each
thread stamped with its creator, every thread request filtered by it, a run naming
another user refused.
"""

import os

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


protect_threads(auth)

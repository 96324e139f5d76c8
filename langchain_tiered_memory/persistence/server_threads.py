"""The threads a LangGraph server keeps, as erasure and export reach them: its own API.

A LangGraph server (``langgraph dev``, LangGraph Platform) runs the memory graph on a
checkpointer of its own and keeps its own record of each thread (metadata, the last run's
values): in memory and ``.langgraph_api/`` for ``langgraph dev``, PostgreSQL on the
Platform. No saver object of the memory's reaches them, so an erasure from the app's
process, the CLI or the console said "removed N threads" while the server still answered
``threads.get_state`` with every message (issue 77 item 1). The server's API does reach
them: :class:`LangGraphServerThreads` finds a user's threads by the owner stamp the
server's ``Auth`` handler puts on each (``langchain_tiered_memory.deploy``: metadata
``owner``, copies included) and deletes them with ``threads.delete``, which removes the
checkpoints and the record.

A server process that runs the memory graph records :data:`SERVER_KIND` beside the data
(:func:`served_by`), so an erasure from a process that holds no
:class:`LangGraphServerThreads` for it reports the server's threads as ``unreached``
instead of a complete erasure.

Example:
    >>> threads = LangGraphServerThreads("http://127.0.0.1:2024",
    ...                                  headers={"Authorization": "Bearer <operator>"})
    >>> memory.attach(server=threads)  # doctest: +SKIP
    >>> memory.forget_user("alice")["server_threads"]  # doctest: +SKIP
    3
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_tiered_memory._steps import Plan, call, paired

__all__ = ["OWNER", "SERVER_KIND", "LangGraphServerThreads", "served_by"]

# What the attachment record calls a LangGraph server's threads (with the server's URL
# where the run's config names it): one kind, whatever saver the server runs on.
SERVER_KIND = "threads LangGraph server"

# The thread metadata key the server's Auth handler stamps with the identity that created
# the thread (the key LangGraph's own authorization guide uses; deploy.protect_threads).
OWNER = "owner"

# How many threads a search asks for at a time.
_PAGE = 100


def served_by(config: Mapping[str, Any] | None = None) -> str | None:
    """The run's LangGraph server (its API URL, ``""`` where the server names none), or
    ``None`` for a run no LangGraph server started (or outside a run). A server puts its
    version in every run's metadata (``langgraph_api_version``) and its URL where it knows
    one. ``config``: the run's; by default the current run's (``get_config()``).

    Example:
        >>> served_by({"metadata": {"langgraph_api_version": "0.16.7",
        ...                         "langgraph_api_url": "https://example.org"}})
        'https://example.org'
        >>> served_by({"metadata": {}}) is None
        True
    """
    if config is None:
        from langgraph.config import get_config

        try:
            config = get_config()
        except RuntimeError:  # not in a run: a test, a script
            return None
    metadata = (config or {}).get("metadata") or {}
    if not isinstance(metadata, Mapping) or not metadata.get("langgraph_api_version"):
        return None
    url = metadata.get("langgraph_api_url")
    return url if isinstance(url, str) else ""


def _owner(thread: Mapping[str, Any]) -> str | None:
    owner = (thread.get("metadata") or {}).get(OWNER)
    return owner if isinstance(owner, str) else None


class LangGraphServerThreads:
    """A LangGraph server's threads, reached through its API (``langgraph_sdk``).

    ``url``: the server's API URL. ``headers`` (``{"Authorization": "Bearer ..."}``) or
    ``api_key`` (LangGraph Platform's ``x-api-key``): the identity the erasure acts as. It
    sees the threads the server's ``Auth`` lets it see: a user's own token reaches their
    threads (a "delete my account" request); an operator's must be an identity the
    server's auth lets see every thread. No I/O before the first call.

    Example:
        >>> threads = LangGraphServerThreads("http://127.0.0.1:2024")
        >>> threads.url
        'http://127.0.0.1:2024'
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        api_key: str | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(
                f"url must be the LangGraph server's API URL (http://... or https://...), "
                f"got {url!r}."
            )
        self.url = url.rstrip("/")
        self.headers = dict(headers or {})
        self.api_key = api_key
        self._sync: Any = None
        self._async: Any = None

    def _client(self) -> Any:
        if self._sync is None:
            from langgraph_sdk import get_sync_client

            self._sync = get_sync_client(url=self.url, headers=self.headers, api_key=self.api_key)
        return self._sync

    def _aclient(self) -> Any:
        if self._async is None:
            from langgraph_sdk import get_client

            self._async = get_client(url=self.url, headers=self.headers, api_key=self.api_key)
        return self._async

    # ----- the calls, each in both forms -----

    def _search(self, user_id: str, offset: int) -> list[dict[str, Any]]:
        found = self._client().threads.search(metadata={OWNER: user_id}, limit=_PAGE, offset=offset)
        return list(found)

    async def _asearch(self, user_id: str, offset: int) -> list[dict[str, Any]]:
        found = await self._aclient().threads.search(
            metadata={OWNER: user_id}, limit=_PAGE, offset=offset
        )
        return list(found)

    def _delete(self, thread_id: str) -> None:
        self._client().threads.delete(thread_id)

    async def _adelete(self, thread_id: str) -> None:
        await self._aclient().threads.delete(thread_id)

    def _get(self, thread_id: str) -> dict[str, Any]:
        return dict(self._client().threads.get(thread_id))

    async def _aget(self, thread_id: str) -> dict[str, Any]:
        return dict(await self._aclient().threads.get(thread_id))

    # ----- what erasure and export ask -----

    @paired
    def threads_of(self, user_id: str) -> Plan[list[str]]:
        """The ids of the threads the server keeps as the user's (its owner stamp, the
        copies of their threads included).

        Raises:
            httpx.HTTPError: the server is unreachable or refused the search.
        """
        ids: list[str] = []
        offset = 0
        while True:
            page = yield call(self._search, self._asearch, user_id, offset)
            # the search matched the stamp; checked again, as a server may ignore a filter
            ids += [str(t["thread_id"]) for t in page if _owner(t) == user_id]
            offset += len(page)
            if len(page) < _PAGE:
                return list(dict.fromkeys(ids))

    athreads_of = threads_of.aio

    @paired
    def delete(self, thread_id: str) -> Plan[None]:
        """Delete the thread on the server: its checkpoints and its record."""
        yield call(self._delete, self._adelete, thread_id)

    adelete = delete.aio

    @paired
    def owner(self, thread_id: str) -> Plan[str | None]:
        """The thread's owner stamp, ``None`` for a thread the server does not show."""
        import httpx

        try:
            thread = yield call(self._get, self._aget, thread_id)
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code == 404:
                return None
            raise
        return _owner(thread)

    aowner = owner.aio

    @paired
    def export(self, thread_id: str) -> Plan[dict[str, Any]]:
        """The server's record of the thread (its metadata and values)."""
        thread = yield call(self._get, self._aget, thread_id)
        return {"thread_id": thread_id, **{k: thread.get(k) for k in ("metadata", "values")}}

    aexport = export.aio

    def close(self) -> None:
        """Close the clients this object made."""
        if self._sync is not None:
            self._sync.close()
            self._sync = None

    async def aclose(self) -> None:
        """Async :meth:`close` (both clients)."""
        self.close()
        if self._async is not None:
            await self._async.aclose()
            self._async = None

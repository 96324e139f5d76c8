"""The console's web app: server-rendered pages (Starlette + Jinja2, no script), one per
task: the user list, one user's memory, the recall playground, export and forget.

Every handler reads and writes through :class:`TieredMemory` and its stores, in a thread
pool (their sync methods do blocking I/O). Every page goes through
:class:`~langchain_tiered_memory.console.security.ConsoleGuard` first.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from langchain_tiered_memory._ids import validate_user_id
from langchain_tiered_memory.console import views
from langchain_tiered_memory.console.security import ConsoleGuard, secure_headers
from langchain_tiered_memory.errors import TieredMemoryError
from langchain_tiered_memory.memory import TieredMemory

__all__ = ["create_app"]

logger = logging.getLogger(__name__)

_HERE = Path(__file__).parent
MAX_TURNS = 20
MAX_K = 20
MAX_ID = 200  # characters of an item id typed into a form
MAX_FIND = 500  # characters of an item search (a query, not a document)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(_HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.globals["when"] = views.when
    env.filters["readable"] = views.readable
    env.filters["q"] = lambda params: urlencode(params)
    env.filters["idq"] = form_id
    env.filters["typed"] = typed_id
    env.filters["shown"] = shown_id
    return env


def form_id(value: str) -> str:
    """An id as pages carry it (forms and links): percent-encoded, so that what a form
    cannot carry as text (a line feed becomes CR LF, NUL becomes U+FFFD) comes back as it
    was. :func:`from_form` reads it back.
    """
    return quote(value, safe="")


def from_form(value: Any) -> str:
    """An id a page sent back (see :func:`form_id`), or one a person typed into the URL.

    A page's id is the canonical encoding of one (``quote(unquote(v), safe="") == v``); a
    typed one that is not is taken as typed: ``?u=100%41off`` is the user "100%41off",
    not "100Aoff" (a second decoding would open another user's page).
    """
    if not isinstance(value, str):
        return ""
    decoded = unquote(value)
    return decoded if form_id(decoded) == value else value


def shown_id(user_id: str) -> str:
    """An id as a page shows it: control characters as escapes (a NUL or a line feed
    would read as nothing) and quoted when white space starts or ends it, so that two ids
    that differ only there never look the same.
    """
    shown = "".join(
        c.encode("unicode_escape").decode() if unicodedata.category(c) == "Cc" else c
        for c in user_id
    )
    return f"“{shown}”" if shown != shown.strip() else shown


def typed_id(user_id: str) -> str:
    """What a person types to confirm erasing ``user_id``: the id, or its encoded form
    when it holds characters no one can type into a form (controls).
    """
    if any(unicodedata.category(c) == "Cc" for c in user_id):
        return form_id(user_id)
    return user_id


def _text(value: Any) -> str:
    """A text field as typed: browsers send line breaks as CR LF."""
    return str(value or "").replace("\r\n", "\n")


def create_app(
    memory: TieredMemory,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    read_only: bool = False,
) -> Starlette:
    """The console as an ASGI app over ``memory`` (serve it with uvicorn).

    ``host`` is the address it will be served on (it decides which Host headers are
    accepted); ``token``: required on every request when set; ``read_only``: no POST.
    Check the bind first with :func:`~langchain_tiered_memory.console.check_bind`
    (``tiered-memory ui`` does).

    Example:
        >>> app = create_app(TieredMemory.embedded(), read_only=True)  # doctest: +SKIP
        >>> uvicorn.run(app, host="127.0.0.1", port=8766)  # doctest: +SKIP
    """
    guard = ConsoleGuard(host=host, token=token, read_only=read_only)
    env = _environment()

    store = views.store_label(memory)

    def page(name: str, status: int = 200, **values: Any) -> HTMLResponse:
        html = env.get_template(name).render(
            csrf=guard.csrf_token, read_only=guard.read_only, store=store, **values
        )
        return HTMLResponse(html, status)

    def error(message: str, status: int) -> HTMLResponse:
        return page("error.html", status, message=message)

    def user_of(value: Any) -> str:
        return validate_user_id(from_form(value))

    async def users(request: Request) -> Response:
        contains = request.query_params.get("q") or None
        cursor = request.query_params.get("cursor") or None
        listing = await run_in_threadpool(views.list_users, memory, cursor, contains)
        return page("users.html", listing=listing, q=contains or "", cursor=cursor)

    async def user(request: Request) -> Response:
        user_id = user_of(request.query_params.get("u"))
        offset = request.query_params.get("offset", "0")
        start = int(offset) if offset.isdigit() else 0
        toffset = request.query_params.get("toffset", "0")
        tstart = int(toffset) if toffset.isdigit() else 0
        params = request.query_params
        query = views.ItemQuery(
            text=params.get("find", "").strip()[:MAX_FIND],
            thread=params.get("thread", "").strip(),
            since=_day(params.get("since", "")),
            until=_day(params.get("until", "")),
        )
        view = await run_in_threadpool(views.user_view, memory, user_id, start, tstart, query)
        if views.is_empty(view) and not request.query_params.get("new"):
            # a mistyped id shows no editable empty page; "add memory for them" opens it
            return page("unknown.html", 404, user_id=user_id)
        # only a notice this console wrote (signed): a link cannot forge a receipt
        notice = guard.signed_notice(request.query_params)
        return page(
            "user.html",
            v=view,
            notice=notice,
            per_page=views.ITEMS_PER_PAGE,
            threads_per_page=views.THREADS_PER_PAGE,
            meaning_results=views.MEANING_RESULTS,
        )

    async def playground(request: Request) -> Response:
        user_id = user_of(request.query_params.get("u"))
        text = request.query_params.get("turns", "")
        k_text = request.query_params.get("k", "3")
        k = min(int(k_text), MAX_K) if k_text.isdigit() and int(k_text) > 0 else 3
        turns = text.splitlines()[-MAX_TURNS:]
        result = await run_in_threadpool(views.playground, memory, user_id, turns, k)
        why = request.query_params.get("why", "").strip()[:MAX_ID]
        explained = None
        if why and result.turns:
            explained = await run_in_threadpool(
                views.explain, memory, user_id, result.turns, k, why, result
            )
        return page(
            "playground.html",
            user_id=user_id,
            text=text,
            k=k,
            result=result,
            why=why,
            explained=explained,
        )

    async def export(request: Request) -> Response:
        user_id = user_of(request.query_params.get("u"))
        data = await run_in_threadpool(memory.export_user, user_id)
        body = json.dumps(data, ensure_ascii=False, indent=2, default=str)
        return Response(
            body,
            media_type="application/json",
            headers={"Content-Disposition": _attachment(f"memory-{user_id}.json")},
        )

    def confirm(
        request: Request, form: Any, user_id: str, question: str, button: str, detail: str = ""
    ) -> HTMLResponse:
        """Every erasure asks first: a page that repeats the form with ``confirmed=yes``."""
        fields = [(k, str(v)) for k, v in form.multi_items() if k not in ("csrf", "confirmed")]
        return page(
            "confirm.html",
            action=request.url.path,
            fields=fields,
            user_id=user_id,
            question=question,
            detail=detail,
            button=button,
        )

    def back(user_id: str, notice: str) -> RedirectResponse:
        params = {"u": form_id(user_id), **guard.sign_notice(notice)}
        return RedirectResponse("/user?" + urlencode(params), 303)

    async def post_tag(request: Request) -> Response:
        form = await request.form()
        user_id = user_of(form.get("u"))
        name, value = str(form.get("name", "")), _text(form.get("value"))
        if form.get("action") == "delete":
            if form.get("confirmed") != "yes":
                question = f"Delete the tag {name} of {user_id}?"
                return confirm(request, form, user_id, question, "Delete the tag")
            await run_in_threadpool(memory.delete_user_tags, user_id, [name])
            return back(user_id, f"tag {name} deleted")
        await run_in_threadpool(memory.set_user_tags, user_id, {name: value})
        return back(user_id, f"tag {name} saved")

    async def post_item(request: Request) -> Response:
        form = await request.form()
        user_id = user_of(form.get("u"))
        item_id = str(form.get("id", ""))
        if form.get("action") == "delete":
            if form.get("confirmed") != "yes":
                question = f"Delete item {item_id} of {user_id}?"
                text = await run_in_threadpool(views.item_text, memory, user_id, item_id)
                return confirm(request, form, user_id, question, "Delete the item", text)
            n = await run_in_threadpool(memory.delete_summaries, user_id, [item_id])
            return back(user_id, f"item {item_id} deleted" if n else f"no item {item_id}")
        if form.get("action") == "add":
            await run_in_threadpool(memory.add_summaries, user_id, [_text(form.get("text"))])
            return back(user_id, "item added")
        changed = await run_in_threadpool(
            memory.update_summary, user_id, item_id, _text(form.get("text"))
        )
        return back(user_id, f"item {item_id} saved" if changed else f"item {item_id} unchanged")

    async def post_thread(request: Request) -> Response:
        form = await request.form()
        user_id = user_of(form.get("u"))
        thread = from_form(form.get("thread"))
        if form.get("confirmed") != "yes":
            question = (
                f"Forget the thread {thread} of {user_id}: its messages, its checkpoints and "
                "the items made only from it?"
            )
            return confirm(request, form, user_id, question, "Forget the thread")
        removed = await run_in_threadpool(memory.forget_thread, user_id, thread)
        return back(user_id, f"Thread forgotten: {views.removed_sentence(removed)}.")

    async def post_forget(request: Request) -> Response:
        form = await request.form()
        user_id = user_of(form.get("u"))
        if form.get("confirm") != typed_id(user_id):
            return error("Type the user id exactly to confirm; nothing was erased.", 400)
        removed = await run_in_threadpool(memory.forget_user, user_id)
        return page("forgotten.html", user_id=user_id, removed=removed)

    async def dispatch(request: Request) -> Response:
        refusal = await guard.check(request)
        if refusal is not None:
            return secure_headers(refusal)
        handler = request.scope["endpoint_handler"]
        try:
            response = await handler(request)
        except (TieredMemoryError, ValueError) as exc:
            # bad input (an id, a tag value, a cursor): say why; storage errors propagate
            response = error(str(exc), 400)
        return secure_headers(response)

    def route(path: str, handler: Any, methods: list[str]) -> Route:
        async def endpoint(request: Request) -> Response:
            request.scope["endpoint_handler"] = handler
            return await dispatch(request)

        return Route(path, endpoint, methods=methods)

    routes = [
        route("/", users, ["GET", "HEAD"]),
        route("/user", user, ["GET", "HEAD"]),
        route("/user/playground", playground, ["GET", "HEAD"]),
        route("/user/export", export, ["GET"]),
        route("/user/tags", post_tag, ["POST"]),
        route("/user/items", post_item, ["POST"]),
        route("/user/threads/forget", post_thread, ["POST"]),
        route("/user/forget", post_forget, ["POST"]),
        Mount("/static", app=StaticFiles(directory=_HERE / "static"), name="static"),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return secure_headers(error("No such page here.", 404))

    return Starlette(routes=routes, exception_handlers={404: not_found})


def _day(value: str) -> str:
    """A ``YYYY-MM-DD`` date from a form, or "" (a date input sends that form)."""
    value = value.strip()
    return value if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) else ""


def _attachment(name: str) -> str:
    """A Content-Disposition naming the download after the user, whatever the id holds:
    an ASCII fallback and the exact name (RFC 6266's ``filename*``).
    """
    plain = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in name)
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(name, safe='')}"

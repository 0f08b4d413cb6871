"""``dyngraph view --web TRACE``: the viewer page served from a remote machine.

A standard-library HTTP server (no second web framework: it serves one page and four
kinds of JSON part, read-only). It listens on loopback unless ``--host`` says otherwise;
every request must carry the random token of the printed URL, a request whose ``Origin``
is another site's is refused, and on loopback a ``Host`` that is not loopback (a DNS
rebinding) is refused too. The page is the one ``export`` writes, fetching its parts
(``/api/meta``, ``/api/structure/S``, ``/api/values/P``, ``/api/history?key=K``) instead
of carrying them.

>>> server = ViewerServer(ViewerData.from_trace(trace))     # doctest: +SKIP
>>> server.url                                              # doctest: +SKIP
'http://127.0.0.1:39121/?token=...'
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import json
import secrets
import socket
import sys
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from dyngraph.errors import UserError

from .data import ViewerData
from .packing import pack_structure, pack_values
from .page import page_html

LOOPBACK = "127.0.0.1"


def is_wildcard(host: str) -> bool:
    """``0.0.0.0`` or ``::``: every address of this machine."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ViewerServer(ThreadingHTTPServer):
    """Serves one ``ViewerData`` to whoever holds ``token``."""

    daemon_threads = True

    def __init__(self, data: ViewerData, host: str = LOOPBACK, port: int = 0,
                 token: str | None = None, title: str = "dyngraph") -> None:
        self.data = data
        self.token = token or secrets.token_urlsafe(24)
        self.title = title
        self.lock = threading.Lock()  # the trace's graphs are built by one thread at a time
        self.page = page_html(None, transport="web", title=title).encode("utf-8")
        self._encoded: dict[str, bytes] = {}
        if ":" in host:  # an IPv6 address (``::``, ``::1``)
            self.address_family = socket.AF_INET6
        super().__init__((host.strip("[]"), port), _Handler)
        self.host = host.strip("[]")

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        """The URL to open on this machine (loopback when serving every address)."""
        host = self.host
        if is_wildcard(host):
            host = LOOPBACK if ":" not in host else "::1"
        return self.url_at(host)

    def url_at(self, host: str) -> str:
        """The URL with ``host`` for the machine's name or address."""
        host = host if ":" not in host else f"[{host}]"
        return f"http://{host}:{self.port}/?token={self.token}"

    @property
    def remote_url(self) -> str | None:
        """Serving every address (``--host 0.0.0.0`` or ``::``): the URL by this
        machine's host name, for another machine to open; None otherwise (the printed
        URL already names the address served)."""
        return self.url_at(socket.gethostname()) if is_wildcard(self.host) else None

    def allowed_hosts(self) -> set[str] | None:
        """The ``Host`` headers accepted: loopback names only on loopback (no DNS
        rebinding); anything when serving wider (the token still has to match)."""
        if not is_loopback(self.host):
            return None
        port = self.port
        own = self.host if ":" not in self.host else f"[{self.host}]"
        return {f"{name}:{port}" for name in ("127.0.0.1", "localhost", "[::1]", own)}

    def encoded(self, path: str, query: dict[str, list[str]]) -> bytes:
        """The JSON of the part a path names, encoded once and kept (history: not kept,
        one per node asked); KeyError for none."""
        cacheable = path != "/api/history"
        got = self._encoded.get(path) if cacheable else None
        if got is None:
            body = self.part(path, query)
            got = json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
            if cacheable:
                self._encoded[path] = got
        return got

    def warm(self) -> None:
        """Make every part ahead of its request, the first iteration's first (run in a
        thread: moving along the slider then waits for no Python)."""
        meta = self.data.meta()
        paths = []
        for p, it in enumerate(meta["iterations"]):
            paths += [f"/api/structure/{it['structure']}", f"/api/values/{p}"]
        for path in dict.fromkeys(paths):
            self.encoded(path, {})

    def start_warming(self) -> threading.Thread:
        thread = threading.Thread(target=self.warm, name="dyngraph-viewer-warm", daemon=True)
        thread.start()
        return thread

    def part(self, path: str, query: dict[str, list[str]]) -> Any:
        """The JSON part a path names; KeyError for none."""
        with self.lock:
            if path == "/api/meta":
                return self.data.meta()
            if path == "/api/history":
                return self.data.history(query.get("key", [""])[0])
            kind, _, number = path.rpartition("/")
            if not number.isdigit():
                raise KeyError(path)
            n = int(number)
            meta = self.data.meta()
            # Packed as in the exported page (``packing``): a third less to send and parse.
            if kind == "/api/structure" and n < meta["structures"]:
                return pack_structure(self.data.structure(n))
            if kind == "/api/values" and n < len(meta["iterations"]):
                return pack_values(self.data.values(n))
        raise KeyError(path)


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "dyngraph"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # the terminal shows the URL, not every request

    def do_GET(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        refusal = self._refusal(query)
        if refusal:
            self._send(403, refusal.encode(), "text/plain; charset=utf-8")
            return
        if url.path in ("/", "/index.html"):
            self._send(200, self.server.page, "text/html; charset=utf-8")
            return
        try:
            body = self.server.encoded(url.path, query)
        except KeyError:
            self._send(404, b"not found", "text/plain; charset=utf-8")
            return
        self._send(200, body, "application/json")

    def do_HEAD(self) -> None:  # noqa: N802
        self._send(405, b"", "text/plain; charset=utf-8")

    def _not_allowed(self) -> None:
        self._send(405, b"read-only: GET only", "text/plain; charset=utf-8")

    do_POST = do_PUT = do_DELETE = do_PATCH = _not_allowed  # noqa: N815

    def _refusal(self, query: dict[str, list[str]]) -> str:
        """Why this request is refused ("" when it is not)."""
        server = self.server
        hosts = server.allowed_hosts()
        if hosts is not None and self.headers.get("Host", "") not in hosts:
            return "forbidden: unexpected Host header"
        origin = self.headers.get("Origin")
        if origin is not None and origin != self._own_origin():
            return "forbidden: a page of another site may not read this trace"
        if self.headers.get("Sec-Fetch-Site") == "cross-site" and self.path.startswith("/api/"):
            return "forbidden: a page of another site may not read this trace"
        given = query.get("token", [""])[0]
        if not hmac.compare_digest(given.encode(), server.token.encode()):
            return "forbidden: open the URL dyngraph view --web printed (with its token)"
        return ""

    def _own_origin(self) -> str:
        return "http://" + self.headers.get("Host", "")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", "frame-ancestors 'none'")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def run_web(args: argparse.Namespace) -> int:
    """``dyngraph view --web TRACE [--host H] [--port P]``."""
    from dyngraph.capture.traces import read_trace

    path = Path(args.trace)
    if not path.exists():
        raise UserError(f"no such trace file: {args.trace}")
    if path.is_dir():
        raise UserError(f"{args.trace} is a directory, not a trace file")
    trace = read_trace(path)  # a damaged file: TraceFileError (a UserError)
    host = args.host or LOOPBACK
    data = ViewerData.from_trace(trace, title=f"dyngraph: {path.name}")
    data.meta()  # every graph read once now: a damaged frame fails before serving
    port = args.port or 0
    try:
        server = ViewerServer(data, host=host, port=port, title=f"dyngraph: {path.name}")
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    if not is_loopback(host):
        print(f"dyngraph view: warning: serving on {host}, not loopback: anyone who can reach "
              "this machine and has the URL (its token) can read the trace", file=sys.stderr)
    if data.meta()["iterations"]:  # the first picture's parts, before anyone asks
        server.encoded("/api/structure/0", {})
        server.encoded("/api/values/0", {})
    server.start_warming()
    count = len(data.meta()["iterations"])
    print(f"dyngraph view: {path.name} ({count} iterations) at {server.url}", flush=True)
    if server.remote_url:
        print(f"  from another machine: {server.remote_url} (or this machine's address in "
              "place of its name); Ctrl-C stops", flush=True)
    elif is_loopback(host):
        print(f"  from another machine: ssh -L {server.port}:127.0.0.1:{server.port} THIS_HOST, "
              "then open the same URL there; Ctrl-C stops", flush=True)
    try:
        with warnings.catch_warnings():
            server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0

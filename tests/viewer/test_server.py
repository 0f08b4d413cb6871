"""``dyngraph view --web``: the token, Origin and Host checks, the parts it serves, and the
command line (one-line errors, the warning for --host). No browser needed."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from dyngraph.viewer import ViewerData
from dyngraph.viewer.packing import unpack_structure, unpack_values
from dyngraph.viewer.server import ViewerServer
from viewer_runs import training_run


@pytest.fixture(scope="module")
def server() -> Iterator[ViewerServer]:
    srv = ViewerServer(ViewerData.from_trace(training_run()))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def get(server: ViewerServer, path: str, headers: dict[str, str] | None = None,
        method: str = "GET") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def with_token(server: ViewerServer, path: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}token={server.token}"


def test_no_token_or_a_wrong_one_is_403(server):
    assert get(server, "/")[0] == 403
    assert get(server, "/api/meta")[0] == 403
    assert get(server, "/?token=" + "x" * len(server.token))[0] == 403
    status, body = get(server, with_token(server, "/"))
    assert status == 200 and b'<div id="dg-root"></div>' in body
    assert b'"transport":"web"' in body and server.token.encode() not in body


def test_another_origin_or_a_rebinding_host_is_refused(server):
    own = f"http://127.0.0.1:{server.port}"
    assert get(server, with_token(server, "/api/meta"), {"Origin": own})[0] == 200
    status, body = get(server, with_token(server, "/api/meta"),
                       {"Origin": "http://evil.example"})
    assert status == 403 and b"another site" in body
    assert get(server, with_token(server, "/api/meta"), {"Origin": "null"})[0] == 403
    # A name that resolves to 127.0.0.1 for an attacker's page (DNS rebinding).
    assert get(server, with_token(server, "/api/meta"),
               {"Host": f"evil.example:{server.port}"})[0] == 403
    assert get(server, with_token(server, "/api/meta"),
               {"Sec-Fetch-Site": "cross-site"})[0] == 403
    assert get(server, with_token(server, "/api/meta"), method="POST")[0] == 405


def test_parts_are_served_and_unknown_ones_are_404(server):
    status, body = get(server, with_token(server, "/api/meta"))
    meta = json.loads(body)
    assert status == 200 and len(meta["iterations"]) == 4
    s = meta["iterations"][1]["structure"]
    # (packed on the wire, ``viewer/packing.py``; the page unpacks them as this does)
    structure = unpack_structure(json.loads(
        get(server, with_token(server, f"/api/structure/{s}"))[1]))
    values = unpack_values(json.loads(get(server, with_token(server, "/api/values/1"))[1]))
    assert structure["n"] == meta["iterations"][1]["nodes"] == len(values["id"])
    assert structure == json.loads(json.dumps(server.data.structure(s)))
    assert values == json.loads(json.dumps(server.data.values(1)))
    key = structure["key"][5]
    status, body = get(server, with_token(server, "/api/history?key=" +
                                          key.replace("\t", "%09").replace(":", "%3A")))
    assert status == 200 and len(json.loads(body)) == 4
    for path in ("/api/values/99", "/api/structure/x", "/etc/passwd", "/api/../x"):
        assert get(server, with_token(server, path))[0] == 404


def _cli(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "dyngraph", "view", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_cli_serves_a_trace_file_and_warns_when_opened_wider(tmp_path: Path):
    path = tmp_path / "run.dgtrace"
    training_run(2).save(path)
    proc = _cli("--web", "--host", "0.0.0.0", str(path))
    try:
        deadline = time.monotonic() + 60
        line = ""
        while "http://" not in line and time.monotonic() < deadline:
            line = proc.stdout.readline() if proc.stdout else ""
            if proc.poll() is not None:
                break
        assert "(2 iterations) at http://127.0.0.1:" in line
        url = urlsplit(line.split(" at ", 1)[1].strip())
        # Every address is served: the URL another machine opens names this one.
        remote = proc.stdout.readline() if proc.stdout else ""
        assert f"from another machine: http://{socket.gethostname()}:{url.port}/?{url.query} " \
            in remote
        conn = http.client.HTTPConnection("127.0.0.1", url.port, timeout=10)
        conn.request("GET", f"/api/meta?{url.query}")
        assert conn.getresponse().status == 200
        conn.request("GET", "/api/meta")
        assert conn.getresponse().status == 403
        conn.close()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "warning: serving on 0.0.0.0, not loopback" in err


def test_wildcard_hosts_print_this_machines_name():
    """--host 0.0.0.0 or :: serves every address: the URL to open here is loopback's, the
    one for another machine has this machine's host name; a named host is its own URL."""
    data = ViewerData.from_trace(training_run(1))
    for host, here, remote in (("0.0.0.0", "127.0.0.1", socket.gethostname()),
                               ("::", "[::1]", socket.gethostname()), ("::1", "[::1]", None)):
        try:
            srv = ViewerServer(data, host=host)
        except OSError:  # (no IPv6 on this machine)
            assert ":" in host
            continue
        try:
            assert srv.url == f"http://{here}:{srv.port}/?token={srv.token}"
            if remote is None:
                assert srv.remote_url is None
                assert f"{here}:{srv.port}" in (srv.allowed_hosts() or set())
            else:
                assert srv.remote_url == f"http://{remote}:{srv.port}/?token={srv.token}"
        finally:
            srv.server_close()


def test_cli_bad_input_is_one_line(tmp_path: Path):
    missing = subprocess.run([sys.executable, "-m", "dyngraph", "view", "--web",
                              str(tmp_path / "nope.dgtrace")], capture_output=True, text=True)
    assert missing.returncode == 2 and "no such trace file" in missing.stderr
    assert "Traceback" not in missing.stderr
    junk = tmp_path / "junk.dgtrace"
    junk.write_bytes(b"not a trace at all")
    bad = subprocess.run([sys.executable, "-m", "dyngraph", "view", "--web", str(junk)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1

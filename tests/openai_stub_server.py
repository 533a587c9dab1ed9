"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

It speaks ``POST /v1/chat/completions`` like a real server (JSON in, JSON out, ``usage``,
``finish_reason``), checks the bearer token, and can be told to fail: the first
``fail_first`` requests get ``fail_status`` (with an optional ``Retry-After``), the next
``garbage_first`` get HTTP 200 with a body that is not JSON (``garbage``, an HTML error page as
a proxy sends it), and requests can be delayed by ``delay_s`` to exercise client timeouts and
the concurrency limit. The
answer text comes from ``reply(body) -> str`` (default: echo the last user message, reversed
word order, so tests can tell answers apart).

Usage::

    with StubServer(api_key="k", reply=fn) as srv:
        url = srv.base_url  # "http://127.0.0.1:PORT/v1"
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def default_reply(body: dict[str, Any]) -> str:
    last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
    return " ".join(reversed(last.split()[:20]))


class StubServer:
    def __init__(
        self,
        *,
        api_key: str | None = None,
        reply: Callable[[dict[str, Any]], str] = default_reply,
        fail_first: int = 0,
        fail_status: int = 503,
        retry_after: str | None = None,
        delay_s: float = 0.0,
        gather: int = 0,
        garbage_first: int = 0,
        garbage: str = "<html><body><h1>502 Bad Gateway</h1></body></html>",
    ):
        self.api_key = api_key
        self.reply = reply
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.retry_after = retry_after
        self.delay_s = delay_s
        # gather=N: every request waits (up to 10 s) until N requests have been in flight at
        # once, so a concurrency test sees overlap however late a loaded machine runs a thread
        self.gather = gather
        self._gathered = threading.Event()
        self.garbage_first = garbage_first
        self.garbage = garbage
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._count = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, status: int, obj: Any, headers: dict[str, str] | None = None):
                data = json.dumps(obj).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def do_POST(self):
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    server._count += 1
                    n = server._count
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    if server.gather and server.in_flight >= server.gather:
                        server._gathered.set()
                try:
                    if server.gather:
                        server._gathered.wait(timeout=10)
                    if server.delay_s:
                        time.sleep(server.delay_s)
                    if server.api_key is not None and (
                            self.headers.get("Authorization") != f"Bearer {server.api_key}"):
                        self._send(401, {"error": {"message": "invalid api key"}})
                        return
                    if n <= server.fail_first:
                        extra = {"Retry-After": server.retry_after} if server.retry_after else {}
                        self._send(server.fail_status, {"error": {"message": "overloaded"}},
                                   extra)
                        return
                    if n <= server.fail_first + server.garbage_first:
                        data = server.garbage.encode()
                        try:
                            self.send_response(200)
                            self.send_header("Content-Type", "text/html")
                            self.send_header("Content-Length", str(len(data)))
                            self.end_headers()
                            self.wfile.write(data)
                        except (BrokenPipeError, ConnectionResetError):
                            pass
                        return
                    text = server.reply(body)
                    prompt = sum(len(m["content"].split()) for m in body["messages"])
                    completion = len(text.split())
                    self._send(200, {
                        "id": f"chatcmpl-{n}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                  "total_tokens": prompt + completion},
                    })
                finally:
                    with server._lock:
                        server.in_flight -= 1

        return Handler

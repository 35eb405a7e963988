"""A minimal HTTP/1.1 server for GET requests on loopback: one request per connection.

The node answers a few machine readers over HTTP (Prometheus scrapes, an aggregator reading
an application's document); none needs more than a request line and a body, so the node does
not carry a web framework. A reader gets 5 s to send its request head (at most 8 KiB).
"""

from __future__ import annotations

from collections.abc import Callable

import trio

__all__ = ["Answer", "serve_get"]

#: ``answer(path)``: the status, content type and body for ``GET path`` (path without the query).
Answer = Callable[[str], tuple[int, str, bytes]]

_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}


async def serve_get(answer: Answer, port: int, host: str = "127.0.0.1", *,
                    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve ``answer`` on ``host:port``; ``task_status`` gets the port bound (``port`` 0: any free one)."""

    async def handle(stream: trio.abc.Stream) -> None:
        try:
            with trio.move_on_after(5):
                request = b""
                while b"\r\n\r\n" not in request and len(request) < 8192:
                    chunk = await stream.receive_some(4096)
                    if not chunk:
                        return
                    request += chunk
                words = request.split(b"\r\n", 1)[0].split()
                if len(words) >= 2 and words[0] == b"GET":
                    status, content_type, body = answer(words[1].decode("ascii", "replace").split("?", 1)[0])
                else:
                    status, content_type, body = 405, "text/plain", b"GET only\n"
                head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\nContent-Type: {content_type}\r\n"
                        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
                await stream.send_all(head + body)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            await stream.aclose()

    listeners = await trio.open_tcp_listeners(port, host=host)
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(handle, listeners)

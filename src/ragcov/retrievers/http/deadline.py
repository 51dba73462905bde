"""One deadline for a whole HTTP request: a timer that shuts the request's sockets down.

httpx's own timeouts bound each read, so a server that trickles a byte at a time
would never trip them. A :class:`Watchdog` therefore tracks every socket the
client opens (through httpcore's trace hook) and, when an attempt's deadline
passes, shuts them down from a timer thread: that ends whatever read or write is
blocked, and the caller reports the attempt as timed out.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import weakref
from collections.abc import Iterator
from typing import Any


class Watchdog:
    """Ends each attempt at its deadline; pass :meth:`trace` as httpx's ``trace``.

    Attempts are one at a time (:meth:`attempt` holds a lock), so the sockets known
    when the deadline passes are the attempt's and idle keep-alive ones; those are
    shut too, and the connection pool replaces them.
    """

    def __init__(self) -> None:
        self._send_lock = threading.Lock()
        self._sockets_lock = threading.Lock()
        # Every socket the client opened (weakly, so closed ones go), and the current
        # attempt's "deadline passed" flag.
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._expired: threading.Event | None = None
        self._tcp: socket.socket | None = None  # the attempt's new plain socket
        self._handshake: socket.socket | None = None  # a duplicate of it during TLS set-up

    @contextlib.contextmanager
    def attempt(self, timeout: float) -> Iterator[threading.Event]:
        """Run one attempt of at most ``timeout`` seconds; the event is set once they pass."""
        with self._send_lock:
            expired = threading.Event()
            timer = threading.Timer(timeout, self._abort, args=(expired,))
            timer.daemon = True
            with self._sockets_lock:
                self._expired = expired
            timer.start()
            try:
                yield expired
            finally:
                timer.cancel()
                timer.join()  # an abort under way ends before the next attempt starts
                with self._sockets_lock:
                    self._expired = None
                self._end_handshake()
                self._tcp = None

    def forget(self) -> None:
        """Drop every tracked socket (the client was closed)."""
        with self._sockets_lock:
            self._sockets.clear()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook: keep a handle on each socket the client opens.

        Called in the attempt's thread. Wrapping a socket in TLS detaches the plain
        socket object, so for the handshake the watchdog holds a duplicate descriptor
        (shutdown acts on the connection, whichever descriptor names it), closed once
        the TLS socket itself is known.
        """
        if event.endswith(".connect_tcp.complete"):
            self._tcp = _socket_of(info.get("return_value"))
            self._watch(self._tcp)
        elif event.endswith(".start_tls.started") and self._tcp is not None:
            with contextlib.suppress(OSError):  # already wrapped: TLS inside a TLS proxy
                self._handshake = self._tcp.dup()
                self._watch(self._handshake)
        elif event.endswith((".start_tls.complete", ".start_tls.failed")):
            self._end_handshake()
            if event.endswith(".complete"):
                self._watch(_socket_of(info.get("return_value")))

    def _watch(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._sockets_lock:
            self._sockets.add(sock)
            if self._expired is not None and self._expired.is_set():
                _shutdown(sock)  # connected after the deadline passed

    def _end_handshake(self) -> None:
        if self._handshake is not None:
            with self._sockets_lock:
                self._sockets.discard(self._handshake)
            self._handshake.close()
            self._handshake = None

    def _abort(self, expired: threading.Event) -> None:
        """At the deadline (timer thread): end the attempt by shutting its sockets down.

        shutdown() (not close()) wakes a blocked recv or send without freeing the
        descriptor.
        """
        with self._sockets_lock:
            expired.set()
            for sock in list(self._sockets):
                _shutdown(sock)


def _socket_of(stream: Any) -> socket.socket | None:
    sock = stream.get_extra_info("socket") if stream is not None else None
    return sock if isinstance(sock, socket.socket) else None


def _shutdown(sock: socket.socket) -> None:
    # OSError: already closed, or detached when TLS wrapped it (the wrapper is watched too).
    with contextlib.suppress(OSError):
        # The plain socket's shutdown, also for an SSLSocket: its own would drop the TLS
        # state under the thread that is reading.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)

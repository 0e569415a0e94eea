"""What a local cluster exposes on the network, and attaching to addresses where no
scheduler answers: each case found by starting the real thing and listing its sockets.

Local clusters here are real (one single-thread CPU worker, a few seconds each)."""
from __future__ import annotations

import socket
import threading

import pytest

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.pipeline import cluster as C
from gpu_sssp.pipeline.cluster import start_cluster


@pytest.mark.parametrize("address", ["http://127.0.0.1:8786", "ucx://127.0.0.1:8786", "foo://h:1"])
def test_a_scheduler_address_of_another_scheme_is_one_line(tmp_path, address):
    """``--scheduler http://...`` (or a scheduler file naming one) ended in Dask's
    ``ValueError: unknown address scheme`` traceback (``ucx``: a ``TypeError``)."""
    with pytest.raises(UsageError, match=r"^--scheduler .*not a scheduler address \(scheme "):
        C.check_scheduler_address(address)
    f = tmp_path / "sched.json"
    f.write_text('{"address": "%s"}' % address)
    with pytest.raises(UsageError, match=r"^--scheduler-file .*sched\.json: its address .* is not a scheduler "
                       r"address \(scheme "):
        C.read_scheduler_file(f)


class _Answering:
    """A TCP server on 127.0.0.1 that answers whatever it reads with ``reply`` and closes:
    an HTTP server (or proxy) that answers garbage at once, unlike Tornado's dashboard."""

    def __init__(self, reply: bytes):
        self.reply = reply
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                try:
                    conn.settimeout(2)
                    conn.recv(65536)
                    conn.sendall(self.reply)
                except OSError:
                    pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.mark.parametrize("reply, message", [
    (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", "an HTTP server answers there"),
    (b"\xff" * 64, "what answers there is not a Dask scheduler"),
])
def test_a_server_that_answers_garbage_is_one_line(reply, message):
    """A server that answers Dask's handshake at once with bytes of its own (an HTTP
    proxy's 400): its first 8 bytes, read as a frame length, made Dask's client allocate
    exabytes: ``error: Unable to allocate 3.07 EiB ...`` (exit 2), naming nothing."""
    with _Answering(reply) as srv:
        with pytest.raises(C.SchedulerUnreachableError, match=rf"^--scheduler X: {message}"):
            C.probe_scheduler(f"tcp://127.0.0.1:{srv.port}", "--scheduler X", grace=1.0)


def test_a_scheduler_that_never_answers_the_connection_is_one_line(monkeypatch):
    """A host that is down or a firewall that drops the connection: Dask's own "Timed out
    trying to connect to tcp://... after 30 s" came out as the error (exit 2), naming no
    option.  (The network's silence is stood in for: the probe lets such an address through
    to Dask's client, whose OSError is what is seen.)"""
    import distributed

    
    def client(*args, **kwargs):
        raise OSError("Timed out trying to connect to tcp://192.0.2.77:8786 after 30 s")

    monkeypatch.setattr(C, "probe_scheduler", lambda *a, **k: None)
    monkeypatch.setattr(distributed, "Client", client)
    with pytest.raises(C.SchedulerUnreachableError, match=r"^--scheduler tcp://192\.0\.2\.77:8786: no answer "
                       r"\(Timed out .*distributed\.comm\.timeouts\.connect"):
        start_cluster(scheduler="tcp://192.0.2.77:8786")

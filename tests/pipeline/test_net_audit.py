"""What a local cluster exposes on the network, and attaching to addresses where no
scheduler answers: each case found by starting the real thing and listing its sockets.

Local clusters here are real (one single-thread CPU worker, a few seconds each)."""
from __future__ import annotations

import ipaddress
import socket
import threading
import urllib.request
import warnings

import pytest

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.pipeline import cluster as C
from gpu_sssp.pipeline.cluster import start_cluster

# the messages of the pipeline functions the command line calls, in its words (--zero-based)
pytestmark = pytest.mark.usefixtures("cli_words")

psutil = pytest.importorskip("psutil")


def _listening(handle) -> dict:
    """Every listening TCP socket of this process and its children (the workers and
    nannies): ``{(ip, port): pid}``."""
    procs = [psutil.Process()] + psutil.Process().children(recursive=True)
    out = {}
    for p in procs:
        try:
            conns = p.net_connections(kind="tcp")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        for c in conns:
            if c.status == psutil.CONN_LISTEN:
                out[(c.laddr.ip, c.laddr.port)] = p.pid
    return out


def _loopback(ip: str) -> bool:
    return ipaddress.ip_address(ip.split("%", 1)[0]).is_loopback


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status


def test_default_local_cluster_listens_on_loopback_only_and_warns_nothing():
    """The promise itself: scheduler, nanny, worker, worker HTTP servers and dashboard
    all on 127.0.0.1 (a guard: Dask's own defaults put the dashboard on every interface)."""
    before = set(_listening(None))
    with warnings.catch_warnings():
        warnings.simplefilter("error", C.NetworkExposureWarning)
        with start_cluster(cpu_workers=1) as handle:
            socks = {a: p for a, p in _listening(handle).items() if a not in before}
            assert len(socks) >= 5, socks  # scheduler, its HTTP server, nanny, worker, worker HTTP
            assert all(_loopback(ip) for ip, _port in socks), socks
            assert handle.info["exposed"] == []


def test_a_dashboard_on_every_interface_is_said_from_python_too():
    """``dashboard_address=":0"`` opens the dashboard to the network: ``study()`` /
    ``start_cluster()`` from Python said nothing (only the command line printed a note)."""
    with pytest.warns(C.NetworkExposureWarning, match=r"the dashboard listens on every network interface "
                      r"\(--dashboard-address :0\)"):
        with start_cluster(cpu_workers=1, dashboard_address=":0") as handle:
            http = [ip for (ip, port), pid in _listening(handle).items()
                    if port == handle.cluster.scheduler.http_server.port]
            assert http and not all(_loopback(ip) for ip in http)


def test_an_address_that_is_not_loopback_is_named_as_exposed():
    """``--host 192.0.2.2`` (an interface of the machine) or a dashboard there reach
    the network as surely as 0.0.0.0 does: no note was printed for them."""
    [line] = C._exposed("192.0.2.2", "192.0.2.2:0", False)
    assert line.startswith("the scheduler and workers listen on 192.0.2.2 (--host 192.0.2.2): other machines")
    [line] = C._exposed("127.0.0.1", "10.1.2.3:8787", True)
    assert line.startswith("the dashboard listens on 10.1.2.3 (--dashboard-address 10.1.2.3:8787)")
    assert C._exposed("127.0.0.1", "127.0.0.2:8787", True) == []
    assert C._exposed("::1", "[::1]:8787", True) == []
    assert C._exposed("localhost", "localhost:0", True) == []


def test_exposure_from_a_setting_names_the_setting_and_its_source(monkeypatch):
    """``DASK_SSSP__CLUSTER__HOST=0.0.0.0``: the note said ``(--host 0.0.0.0)``, an option
    the user never gave."""
    import dask.config

    from gpu_sssp.pipeline.config import describe_setting

    monkeypatch.setenv("DASK_SSSP__CLUSTER__HOST", "0.0.0.0")
    with dask.config.set({"sssp.cluster.host": "0.0.0.0"}):
        lines = C._exposed("0.0.0.0", "0.0.0.0:8787", True, host_from=describe_setting("cluster.host"))
    assert len(lines) == 2
    for line in lines:
        assert ("(setting sssp.cluster.host '0.0.0.0' from the environment variable DASK_SSSP__CLUSTER__HOST)"
                in line), line
        assert "--host" not in line


def test_the_dashboard_link_names_the_interface_the_dashboard_listens_on():
    """``--dashboard-address 192.0.2.2:8787`` printed ``http://127.0.0.1:8787/status``
    (Dask names the scheduler's host), where nothing listens.  127.0.0.2 is a loopback
    address other than the scheduler's 127.0.0.1."""
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.2", 0))
    except OSError:
        pytest.skip("127.0.0.2 cannot be bound here")
    with start_cluster(cpu_workers=1, dashboard_address="127.0.0.2:0") as handle:
        link = handle.dashboard()["link"]
        assert link.startswith("http://127.0.0.2:"), link
        assert _get(link) == 200


def _skip_unless_ipv6(host: str) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind((host, 0))
    except OSError:
        pytest.skip(f"{host} cannot be bound here")


def test_an_ipv6_loopback_host_starts_and_links_right():
    """``--host ::1`` passed the checks, then Dask refused the unbracketed address and
    the command said "a worker process ended while starting; run the command again"
    (exit 1); its dashboard link was ``http://[:PORT/status``."""
    _skip_unless_ipv6("::1")
    with start_cluster(cpu_workers=1, dashboard_address="[::1]:0", host="::1") as handle:
        assert handle.client.submit(sum, [1, 2]).result() == 3
        socks = [ip for ip, _port in _listening(handle)]
        assert "::1" in socks
        link = handle.dashboard()["link"]
        assert link.startswith("http://[::1]:"), link
        assert _get(link) == 200


def test_an_ipv6_every_interface_host_links_right():
    """``--host ::`` (every interface, IPv6) with the dashboard on every interface too:
    the link was Dask's, split at the address's first colon (``http://[fd00:PORT/status``,
    where the README says IPv6 links are right); it names ``::1`` now, which reaches it."""
    _skip_unless_ipv6("::")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", C.NetworkExposureWarning)  # (every interface: warned, as it should)
        with start_cluster(cpu_workers=1, dashboard_address="[::]:0", host="::") as handle:
            assert handle.client.submit(sum, [1, 2]).result() == 3
            link = handle.dashboard()["link"]
            assert link.startswith("http://[::1]:"), link
            assert _get(link) == 200


def test_a_dashboard_link_template_that_fails_still_gives_the_link():
    """A user's ``distributed.dashboard.link`` naming an unknown value: Dask logs a
    warning and gives no link, and the study said "dashboard: none (the scheduler names
    no dashboard)" while one was served."""
    import dask.config

    with dask.config.set({"distributed.dashboard.link": "http://{no_such_value_here}:{port}/status"}):
        with start_cluster(cpu_workers=1, dashboard_address="127.0.0.1:0") as handle:
            got = handle.dashboard()
            assert got["link"] and got["link"].startswith("http://127.0.0.1:"), got
            assert _get(got["link"]) == 200


@pytest.mark.parametrize("address", ["http://127.0.0.1:8786", "foo://h:1"])
def test_a_scheduler_address_of_another_scheme_is_one_line(tmp_path, address):
    """``--scheduler http://...`` (or a scheduler file naming one) ended in Dask's
    ``ValueError: unknown address scheme`` traceback."""
    with pytest.raises(UsageError, match=r"^--scheduler .*not a scheduler address \(scheme "):
        C.check_scheduler_address(address)
    f = tmp_path / "sched.json"
    f.write_text('{"address": "%s"}' % address)
    with pytest.raises(UsageError, match=r"^--scheduler-file .*sched\.json: its address .* is not a scheduler "
                       r"address \(scheme "):
        C.read_scheduler_file(f)


def _ucx_works() -> bool:
    import warnings as w

    from distributed.comm.registry import get_backend

    try:
        with w.catch_warnings():
            w.simplefilter("ignore")
            get_backend("ucx").get_address_host("127.0.0.1:8786")
    except Exception:  # noqa: BLE001
        return False
    return True


def test_a_ucx_scheduler_address_is_taken_where_dask_can_connect_with_it(tmp_path):
    """``ucx://`` (a dask-cuda cluster started with ``--protocol ucx``) was refused as a
    scheme a client does not connect with, also where distributed-ucxx is installed; it
    is taken where Dask has a working backend for it and refused in one line, with
    Dask's own reason (install distributed-ucxx), where it has not.  (Where it is taken
    the probe leaves it to Dask's client: it asks sockets of Dask's TCP schemes only.)"""
    address = "ucx://127.0.0.1:8786"
    if _ucx_works():
        assert C._address_problem(address) is None
        C.probe_scheduler(address, "--scheduler x", grace=0.1)  # returns at once: not probed
        return
    with pytest.raises(UsageError, match=r"^--scheduler 'ucx://127\.0\.0\.1:8786': not a scheduler address "
                       r"\(scheme 'ucx': Dask cannot connect with it here \(.*distributed-ucxx"):
        C.check_scheduler_address(address)
    f = tmp_path / "sched.json"
    f.write_text('{"address": "%s"}' % address)
    with pytest.raises(UsageError, match=r"its address 'ucx://.*distributed-ucxx"):
        C.read_scheduler_file(f)


def _tls_files(folder):
    """A self-signed certificate and its key (openssl), or None where openssl is missing."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        return None
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    return cert, key


def test_attaching_to_a_tls_scheduler_with_the_clients_tls_settings(tmp_path):
    """A ``tls://`` scheduler, with the client's ``distributed.comm.tls.*`` settings (the
    README's advice for a cluster across machines): the attach probe connected without
    them, Dask's connector raised a TypeError (no ssl_context) and the probe took that
    for a server that does not speak Dask's protocol, refusing an attach that Client()
    makes.  Without the settings the probe leaves the refusal to Dask's client."""
    import asyncio
    import time

    import dask
    from distributed import Scheduler
    from distributed.security import Security

    files = _tls_files(tmp_path)
    if files is None:
        pytest.skip("openssl is not installed (for a test certificate)")
    cert, key = (str(f) for f in files)
    cfg = {"distributed.comm.tls.ca-file": cert, "distributed.comm.tls.client.cert": cert,
           "distributed.comm.tls.client.key": key, "distributed.comm.tls.scheduler.cert": cert,
           "distributed.comm.tls.scheduler.key": key}
    found, stop = {}, threading.Event()

    def serve():
        async def main():
            with dask.config.set(cfg):
                security = Security()
            async with Scheduler(security=security, protocol="tls", host="127.0.0.1", port=0,
                                 dashboard=False) as s:
                found["address"] = s.address
                while not stop.is_set():
                    await asyncio.sleep(0.05)

        try:
            asyncio.run(main())
        except Exception as exc:  # noqa: BLE001 - shown by the wait below
            found["error"] = exc

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        deadline = time.monotonic() + 60
        while "address" not in found and "error" not in found and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "address" in found, found
        address = found["address"]
        assert address.startswith("tls://")
        C.probe_scheduler(address, "--scheduler x", grace=2.0)  # no settings: not refused by the probe
        with dask.config.set(cfg):
            with start_cluster(scheduler=address) as handle:
                assert handle.mode == "attached"
                assert handle.client.run_on_scheduler(lambda: 1) == 1
    finally:
        stop.set()
        t.join(30)


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

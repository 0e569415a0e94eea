"""pipeline.cluster: a local study listens on localhost only (scheduler, workers,
dashboard), ``dashboard=False`` serves nothing; pipeline.plugins: the graph plugin's
teardown releases the graph's device copies."""
from __future__ import annotations

import gc
import ipaddress
import os
import urllib.error
import urllib.request

import numpy as np
import pytest

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.pipeline.cluster import start_cluster

# the messages of the pipeline functions the command line calls, in its words (--zero-based)
pytestmark = pytest.mark.usefixtures("cli_words")


def _listening(pids=None) -> list[tuple[int, str, int]]:
    """(pid, ip, port) of every listening inet socket of this process and its children
    (a LocalCluster's scheduler and nannies live here, its workers are children)."""
    psutil = pytest.importorskip("psutil")
    me = psutil.Process()
    out = []
    for p in [me, *me.children(recursive=True)]:
        try:
            conns = p.net_connections(kind="inet")
        except psutil.Error:
            continue
        out += [(p.pid, c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN]
    return out


def _loopback(ip: str) -> bool:
    return ipaddress.ip_address(ip).is_loopback


def _get(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_local_cluster_listens_on_localhost_only():
    before = set(_listening())
    with start_cluster(cpu_workers=2) as handle:
        sched = handle.cluster.scheduler
        opened = [s for s in _listening() if s not in before]
        # scheduler, its HTTP server, two nannies and two workers at least
        assert len(opened) >= 4, opened
        assert all(_loopback(ip) for _, ip, _ in opened), opened
        assert sched.address.startswith("tcp://127.0.0.1:")
        http = [sock.getsockname()[0] for sock in sched.http_server._sockets.values()]
        assert http and all(_loopback(ip) for ip in http), http
        # the dashboard is there, and the printed link says where
        port = sched.http_server.port
        assert _get(port, "/status") == 200
        assert handle.dashboard_link == f"http://127.0.0.1:{port}/status"
        for w in sched.workers:
            assert w.startswith("tcp://127.0.0.1:")


@pytest.mark.gpu
def test_local_cuda_cluster_listens_on_localhost_only():
    pytest.importorskip("dask_cuda")
    before = set(_listening())
    with start_cluster(gpus="0") as handle:
        assert handle.mode == "local-cuda"
        opened = [s for s in _listening() if s not in before]
        assert opened and all(_loopback(ip) for _, ip, _ in opened), opened
        sched = handle.cluster.scheduler
        http = [sock.getsockname()[0] for sock in sched.http_server._sockets.values()]
        assert http and all(_loopback(ip) for ip in http), http
        assert all(w.startswith("tcp://127.0.0.1:") for w in sched.workers)


def test_no_dashboard_serves_nothing():
    with start_cluster(cpu_workers=1, dashboard=False) as handle:
        sched = handle.cluster.scheduler
        port = sched.http_server.port
        assert port != 8787  # a free port, never the dashboard's
        http = [sock.getsockname()[0] for sock in sched.http_server._sockets.values()]
        assert all(_loopback(ip) for ip in http), http
        for path in ("/status", "/health", "/json/identity.json", "/metrics"):
            assert _get(port, path) == 404, path
        assert handle.dashboard_link is None
        # the cluster still works
        assert handle.client.submit(sum, [1, 2]).result() == 3


def test_dashboard_address_and_host_are_honoured():
    with start_cluster(cpu_workers=1, dashboard_address="127.0.0.1:0") as handle:
        port = handle.cluster.scheduler.http_server.port
        assert port != 8787 and _get(port, "/status") == 200


def test_what_listens_on_every_interface_is_named():
    from gpu_sssp.pipeline.cluster import _exposed, describe_cluster

    # a study prints these (workflows.cmd_study) since Dask's links name 127.0.0.1
    with start_cluster(cpu_workers=1, dashboard_address=":0") as handle:
        http = [sock.getsockname()[0] for sock in handle.cluster.scheduler.http_server._sockets.values()]
        assert not all(_loopback(ip) for ip in http), http  # really every interface
        [line] = describe_cluster(handle)["exposed"]
        assert line.startswith("the dashboard listens on every network interface (--dashboard-address :0): ")
    with start_cluster(cpu_workers=1, dashboard_address="127.0.0.1:0") as handle:
        assert describe_cluster(handle)["exposed"] == []
    [sched, dash] = _exposed("0.0.0.0", "0.0.0.0:8787", True)
    assert sched.startswith("the scheduler and workers listen on every network interface (--host 0.0.0.0): ")
    assert dash.startswith("the dashboard listens on every network interface (--host 0.0.0.0): ")
    assert _exposed("127.0.0.1", "[::]:8787", False) == []  # no dashboard served


@pytest.mark.parametrize("kwargs, message", [
    (dict(scheduler="tcp://127.0.0.1:1", host="0.0.0.0"), "--host and --dashboard-address"),
    (dict(scheduler="tcp://127.0.0.1:1", dashboard_address=":8787"), "--host and --dashboard-address"),
    (dict(cpu_workers=1, dashboard=False, dashboard_address=":9999"), "contradict"),
    (dict(cpu_workers=1, dashboard_address="8787"), "HOST:PORT"),
    (dict(cpu_workers=1, host="tcp://0.0.0.0"), "interface address"),
])
def test_bad_listen_options_are_usage_errors(kwargs, message):
    with pytest.raises(UsageError, match=message):
        start_cluster(**kwargs)


def test_a_host_name_that_does_not_resolve_is_a_usage_error_naming_the_option():
    """Checked before the cluster starts (Dask's own refusal is a RuntimeError 'Cluster
    failed to start' with its traceback)."""
    with pytest.raises(UsageError, match=r"^--host no-such-host\.invalid: host name 'no-such-host\.invalid' "
                       "does not resolve on this machine"):
        start_cluster(cpu_workers=1, host="no-such-host.invalid")
    with pytest.raises(UsageError, match=r"^--dashboard-address no-such-host\.invalid:0: host name "
                       r"'no-such-host\.invalid' does not resolve"):
        start_cluster(cpu_workers=1, dashboard_address="no-such-host.invalid:0")


def test_addresses_are_looked_up_only_where_a_host_name_is_given(monkeypatch):
    """IP addresses (the default 127.0.0.1, 0.0.0.0, [::1]) and :PORT need no lookup: the
    default start-up does not wait on the resolver; a host name is looked up once."""
    import socket

    from gpu_sssp.pipeline.cluster import listen_addresses

    asked = []

    def getaddrinfo(host, *args, **kwargs):
        asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 0))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    assert listen_addresses(None, None, True) == ("127.0.0.1", "127.0.0.1:8787")
    assert listen_addresses("0.0.0.0", ":8787", True) == ("0.0.0.0", ":8787")
    assert listen_addresses("::1", "[::1]:0", True) == ("::1", "[::1]:0")
    assert listen_addresses(None, None, False) == ("127.0.0.1", "127.0.0.1:0")
    assert asked == []
    assert listen_addresses("somehost", None, True) == ("somehost", "somehost:8787")
    assert asked == ["somehost"]


def test_study_refuses_a_host_that_does_not_resolve_before_reading_the_graph(tmp_path):
    """``study()`` checks where its cluster will listen first: the graph (here a file
    that is not there) is not read, no folder is made."""
    from gpu_sssp.pipeline.study.run import study

    with pytest.raises(UsageError, match="--host no-such-host.invalid: host name"):
        study(tmp_path / "missing.gr", cpu_workers=1, host="no-such-host.invalid", out=tmp_path / "s")
    assert not (tmp_path / "s").exists()


#: TEST-NET-1 (RFC 5737): an address no machine of a test run has
_FOREIGN = "192.0.2.1"


def test_an_address_not_on_this_machine_is_a_usage_error_naming_the_option():
    """Checked before the cluster starts: a socket is bound to the address at port 0.
    Dask's cluster used to fail with "Cannot assign requested address" and a traceback
    ("Cluster failed to start")."""
    with pytest.raises(UsageError, match=rf"^--host {_FOREIGN}: not an address of this machine; give 127\.0\.0\.1"):
        start_cluster(cpu_workers=1, host=_FOREIGN)
    with pytest.raises(UsageError, match=rf"^--dashboard-address {_FOREIGN}:0: not an address of this machine"):
        start_cluster(cpu_workers=1, dashboard_address=f"{_FOREIGN}:0")


def test_an_address_not_on_this_machine_in_dask_config_names_the_setting():
    import dask

    from gpu_sssp.pipeline.errors import SettingError

    with dask.config.set({"sssp.cluster.host": _FOREIGN}):
        with pytest.raises(SettingError, match=rf"^setting sssp\.cluster\.host: '{_FOREIGN}' .*: not an address of "
                           "this machine"):
            start_cluster(cpu_workers=1)
    with dask.config.set({"sssp.cluster.dashboard-address": f"{_FOREIGN}:8787"}):
        with pytest.raises(SettingError, match=r"^setting sssp\.cluster\.dashboard-address: .*not an address"):
            start_cluster(cpu_workers=1)


def test_a_host_name_of_another_machine_is_refused_naming_its_address(monkeypatch):
    import socket

    from gpu_sssp.pipeline.cluster import listen_addresses

    monkeypatch.setattr(socket, "getaddrinfo",
                        lambda host, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (_FOREIGN, 0))])
    with pytest.raises(UsageError, match=rf"^--host elsewhere: it names {_FOREIGN}, not an address of this machine"):
        listen_addresses("elsewhere", None, True)


def test_study_refuses_an_address_not_on_this_machine_before_reading_the_graph(tmp_path):
    from gpu_sssp.pipeline.study.run import study

    with pytest.raises(UsageError, match=f"--host {_FOREIGN}: not an address"):
        study(tmp_path / "missing.gr", cpu_workers=1, host=_FOREIGN, out=tmp_path / "s")
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("content, what", [
    (b"{bad", "not JSON: Expecting property name"),
    (b"{}", 'no "address" in it'),
    (b'["tcp://127.0.0.1:8786"]', 'a JSON array, not an object'),
    (b'{"address": 8786}', 'its "address" is 8786, not text'),
    (b'{"address": "  "}', 'its "address" is empty'),
    (b'"tcp://127.0.0.1:8786"', 'a JSON string, not an object'),
    (b"\xff\xfe\x00", "not JSON text"),
])
def test_a_bad_scheduler_file_is_one_usage_error_naming_the_file(tmp_path, content, what):
    """It was an AssertionError traceback (Dask reads the file and asserts on it)."""
    bad = tmp_path / "sched.json"
    bad.write_bytes(content)
    with pytest.raises(UsageError) as err:
        start_cluster(scheduler_file=str(bad))
    assert str(err.value).startswith(f"--scheduler-file {bad}: not a Dask scheduler file ({what}")
    with pytest.raises(UsageError, match="is a folder, not a scheduler file"):
        start_cluster(scheduler_file=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no such scheduler file"):
        start_cluster(scheduler_file=str(tmp_path / "missing.json"))


@pytest.mark.parametrize("address, why", [
    ("not an address", "missing port number"),
    ("tcp://127.0.0.1", "missing port number"),
    ("inproc://192.0.2.1/5/6", "an inproc address belongs to one process"),
])
def test_a_scheduler_file_whose_address_is_malformed_is_one_usage_error(tmp_path, address, why):
    """A scheduler file with an "address" that is no address a client can connect to
    (edited by hand, or written by something else): Dask's ``ValueError`` traceback came
    after the file was read.  Now the same one line as ``--scheduler`` gives, naming the
    file."""
    bad = tmp_path / "sched.json"
    bad.write_text('{"address": "%s"}' % address)
    with pytest.raises(UsageError) as err:
        start_cluster(scheduler_file=str(bad))
    assert str(err.value).startswith(
        f"--scheduler-file {bad}: its address {address!r} is not a scheduler address ({why}"), str(err.value)


def test_a_busy_dashboard_port_gives_no_dask_warning(recwarn):
    """Dask serves the dashboard on another port and warns "Port N is already in use";
    the study prints where the dashboard is itself (the link names the real port)."""
    import socket
    import warnings

    warnings.simplefilter("always")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with start_cluster(cpu_workers=1, dashboard_address=f"127.0.0.1:{port}") as handle:
            real = handle.cluster.scheduler.http_server.port
            assert real != port and handle.dashboard_link == f"http://127.0.0.1:{real}/status"
    assert not [w for w in recwarn if "already in use" in str(w.message)], [str(w.message) for w in recwarn]


def test_zero_cpu_workers_is_refused_not_taken_as_unset():
    with pytest.raises(UsageError, match="--cpu-workers must be at least 1, got 0"):
        start_cluster(cpu_workers=0)


@pytest.mark.parametrize("n", [10**6, 4 * (os.cpu_count() or 1) + 1])
def test_cpu_workers_far_past_the_cores_is_refused(monkeypatch, n):
    """`sssp study ... --cpu-workers 1000000` tried to start a million worker processes:
    no output until it was killed (tests/fuzz_cli.py, seed 9105, at its 120 s timeout).
    More than 4 single-thread workers per core is refused before any is started."""
    import distributed

    def no_cluster(*a, **kw):
        raise AssertionError(f"a LocalCluster of {kw.get('n_workers')} workers was started")

    monkeypatch.setattr(distributed, "LocalCluster", no_cluster)
    with pytest.raises(UsageError, match=f"--cpu-workers {n}: more than 4 workers per core"):
        start_cluster(cpu_workers=n, dashboard=False)


# ---------------------------------------------------------------- plugin teardown
def test_plugin_teardown_releases_the_graph_on_the_device(monkeypatch, tmp_path):
    """The teardown drops the host graph and asks kernels to release its device
    copies (with the arrays kernels derived from them) and the pool's blocks."""
    from gpu_sssp import kernels
    from gpu_sssp.pipeline import plugins
    from gpu_sssp.pipeline.graph import read_parquet
    from tests.pipeline.test_study_support import grid_parquet

    released = []
    monkeypatch.setattr(kernels, "release_device_memory", lambda graph=None: released.append(graph))
    path = grid_parquet(tmp_path, 4, 4)
    fp = read_parquet(path).fingerprint
    plugin = plugins.GraphPlugin(str(path), fp, "cpu")
    plugin.setup()  # loads in a thread of its own
    g = plugin.wait()
    assert g is plugin.graph and "graph_load_s" in plugin.timings
    assert plugins._GRAPHS[fp] is g
    plugin.teardown()
    assert plugin.graph is None and fp not in plugins._GRAPHS
    assert len(released) == 1 and released[0] is g  # that graph only, not every graph


def test_forget_graphs_drops_one_graphs_copies(monkeypatch):
    """kernels.gpu.loader.forget_graphs(graph): that graph's copies on every device go,
    other graphs' stay."""
    from gpu_sssp.kernels.gpu import loader
    from gpu_sssp.kernels.graph import Graph

    g = Graph.from_edges([0, 1], [1, 2], [3, 4])
    other = object()
    monkeypatch.setattr(loader, "_graphs", {(g.fingerprint, "min", 0): object(), (g.fingerprint, "min", 1): object(),
                                            ("another", "min", 0): other})
    loader.forget_graphs(g)
    assert list(loader._graphs) == [("another", "min", 0)]


@pytest.mark.gpu
def test_plugin_teardown_returns_device_memory(tmp_path):
    """On a GPU: after setup + a batched solve, teardown gives the memory back."""
    import cupy as cp

    from gpu_sssp import kernels
    from gpu_sssp.pipeline import plugins
    from gpu_sssp.pipeline.graph import read_parquet
    from tests.pipeline.test_study_support import grid_parquet

    kernels.solve(read_parquet(grid_parquet(tmp_path, 8, 8)), np.arange(4), method="batched")  # compile
    pool = cp.get_default_memory_pool()
    gc.collect()
    pool.free_all_blocks()
    base_used, base_total = pool.used_bytes(), pool.total_bytes()

    path = grid_parquet(tmp_path, 300, 300)
    fp = read_parquet(path).fingerprint
    plugin = plugins.GraphPlugin(str(path), fp, "gpu")
    plugin.setup()
    plugin.wait()
    res = kernels.solve(plugin.graph, np.arange(64), method="batched")
    del res
    gc.collect()
    held = pool.used_bytes() - base_used
    assert held >= plugin.graph.indices.nbytes  # the graph (and the kernel's layout) stay resident
    plugin.teardown()
    gc.collect()
    assert pool.used_bytes() - base_used <= 1 << 20, (held, pool.used_bytes() - base_used)
    assert pool.total_bytes() - base_total <= 1 << 20


def test_plugin_loads_in_the_background_and_tasks_get_its_error(tmp_path):
    """setup returns at once; a task waiting for the graph gets the loading error (here a
    file whose fingerprint is not the study's) rather than a half-loaded graph."""
    from gpu_sssp.pipeline import plugins
    from tests.pipeline.test_study_support import grid_parquet

    path = grid_parquet(tmp_path, 4, 4)
    plugin = plugins.GraphPlugin(str(path), "not-this-graph", "cpu")
    plugin.setup()
    with pytest.raises(ValueError, match="is the file the same on every node"):
        plugin.wait(timeout=60)
    assert plugin.graph is None and "setup_s" in plugin.timings
    plugin.teardown()


def test_closing_a_started_cluster_quiets_the_workers_teardown_log():
    """Closing a cluster this process started lowers the workers' ``distributed.worker``
    log first: a heartbeat cut by the close logged a traceback after a Ctrl-C (a CI run of
    ``test_ctrl_c_leaves_the_study_interrupted``).  An attached client leaves it alone."""
    import logging

    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.cluster import ClusterHandle

    logger = logging.getLogger("distributed.worker")
    before = logger.level
    try:
        # worker threads in this process: their logger is this process's
        cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=None)
        attached = ClusterHandle(Client(cluster), None, "attached", "cpu")
        attached.close()
        assert logger.level == before
        ClusterHandle(Client(cluster), cluster, "local-cpu", "cpu").close()
        assert logger.level == logging.CRITICAL
    finally:
        logger.setLevel(before)


class _FakeClient:
    def __init__(self, close_raises=None):
        self.close_raises = close_raises
        self.closed = False

    def run(self, *a, **kw):
        return {}

    def close(self):
        self.closed = True
        if self.close_raises is not None:
            raise self.close_raises


class _FakeCluster:
    def __init__(self, close_raises=None):
        self.close_raises = close_raises
        self.shutdown_on_close = True
        self.closes = 0

    def close(self):
        self.closes += 1
        if self.close_raises is not None:
            raise self.close_raises


def test_a_ctrl_c_during_the_cluster_close_stops_waiting():
    """Ctrl-C while the cluster closes: raised at once, and Dask's exit hook does not
    close it again (it waited 10 s for the close the Ctrl-C had cancelled)."""
    from gpu_sssp.pipeline.cluster import ClusterHandle

    cluster = _FakeCluster(KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        ClusterHandle(_FakeClient(), cluster, "local-cpu", "cpu").close()
    assert cluster.closes == 1 and cluster.shutdown_on_close is False
    # interrupted while the client closes: the cluster's (waiting) close is not begun
    cluster = _FakeCluster()
    with pytest.raises(KeyboardInterrupt):
        ClusterHandle(_FakeClient(KeyboardInterrupt()), cluster, "local-cpu", "cpu").close()
    assert cluster.closes == 0 and cluster.shutdown_on_close is False
    # a plain close, or a failing client close, still closes the cluster
    cluster = _FakeCluster()
    ClusterHandle(_FakeClient(), cluster, "local-cpu", "cpu").close()
    assert cluster.closes == 1 and cluster.shutdown_on_close is True
    cluster = _FakeCluster()
    with pytest.raises(OSError):
        ClusterHandle(_FakeClient(OSError("gone")), cluster, "local-cpu", "cpu").close()
    assert cluster.closes == 1


def test_a_worker_that_dies_while_the_local_cluster_starts_is_one_line():
    """A worker process killed (or out of memory) while a local cluster starts: Dask
    raises ``RuntimeError("Nanny failed to start.")``, which the command line printed as a
    bug's traceback (exit 1).  It is one product error naming Dask's reason."""
    from gpu_sssp.kernels.errors import SsspError
    from gpu_sssp.pipeline import cluster as cl

    class Dies:
        def __init__(self, **kw):
            try:
                raise RuntimeError("Nanny failed to start worker process")
            except RuntimeError as exc:
                raise RuntimeError("Nanny failed to start.") from exc

    with pytest.raises(SsspError, match=r"^the local cluster did not start \(Nanny failed to start\.; Nanny failed "
                       r"to start worker process\): a worker process ended while starting") as got:
        cl._start_local(Dies, {}, False, "local-cpu", "cpu", {})
    assert got.value.exit_code == 1 and "\n" not in str(got.value)


def _sigint_ignored() -> bool:
    import signal

    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_a_local_clusters_workers_leave_ctrl_c_to_the_client():
    """A Ctrl-C on the terminal reaches the whole foreground process group: each local
    worker's own KeyboardInterrupt printed Dask's tracebacks after the study's one line.
    The workers ignore SIGINT (the client stops the study and closes the cluster)."""
    from gpu_sssp.pipeline import cluster as cl

    handle = cl.start_cluster(cpu_workers=1, dashboard=False)
    try:
        got = handle.client.run(_sigint_ignored)
        assert got and all(got.values()), got
    finally:
        handle.close()


@pytest.mark.parametrize("address", ["", "nonsense::", "inproc://x"])
def test_start_cluster_refuses_a_malformed_scheduler_address(address):
    """The check the CLI makes before the graph is read is start_cluster's own, so the
    Python API gets the same one line (it was Dask's ValueError traceback)."""
    with pytest.raises(UsageError, match="not a scheduler address"):
        start_cluster(scheduler=address)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_scheduler_address_where_nothing_listens_is_one_line_at_once(tmp_path):
    """A wrong port (or a scheduler that has stopped, its scheduler file left behind) was
    retried by Dask for 30 s before 'Timed out trying to connect'; a refused connection
    is now said at once (after a short grace), naming the option."""
    import dask
    import distributed  # noqa: F401 - its config defaults loaded before the override below

    from gpu_sssp.pipeline.cluster import SchedulerUnreachableError

    port = _free_port()
    with dask.config.set({"distributed.comm.timeouts.connect": "120s"}):
        with pytest.raises(SchedulerUnreachableError, match=rf"--scheduler tcp://127.0.0.1:{port}: nothing listens"):
            start_cluster(scheduler=f"tcp://127.0.0.1:{port}")
        f = tmp_path / "scheduler.json"
        f.write_text('{"address": "tcp://127.0.0.1:%d"}' % port)
        with pytest.raises(SchedulerUnreachableError, match=r"--scheduler-file .*scheduler.json: its scheduler"):
            start_cluster(scheduler_file=str(f))


def test_a_scheduler_host_that_does_not_resolve_is_one_line():
    import dask
    import distributed  # noqa: F401 - its config defaults loaded before the override below

    from gpu_sssp.pipeline.cluster import SchedulerUnreachableError

    with dask.config.set({"distributed.comm.timeouts.connect": "120s"}):
        with pytest.raises(SchedulerUnreachableError, match="does not resolve"):
            start_cluster(scheduler="tcp://no-such-host.invalid:8786")


def _listener(speaks_http: bool):
    """A localhost TCP server that is no Dask scheduler: an HTTP server (the dashboard's
    port given by mistake), or a socket that accepts and never answers."""
    import http.server
    import socket
    import threading

    if speaks_http:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server.server_address[1], server.shutdown
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    return sock.getsockname()[1], sock.close


@pytest.mark.parametrize("http", [True, False], ids=["http", "silent"])
def test_an_address_where_no_scheduler_answers_is_one_line_not_a_hang(tmp_path, http):
    """``--scheduler tcp://HOST:8787`` (the dashboard's port) or a stale scheduler file
    whose port another service took: Dask's connect waits for the handshake's reply
    without a limit, and the study hung silently (Client(timeout=...) too).  The probe
    now says that an HTTP server answers there at once, or, where something accepts
    connections but never answers, that no scheduler answered, after the connect
    timeout."""
    import re
    import threading
    import time

    import dask
    import distributed  # noqa: F401 - its config defaults loaded before the override below

    from gpu_sssp.pipeline.cluster import SchedulerUnreachableError

    port, stop = _listener(http)
    try:
        f = tmp_path / "scheduler.json"
        f.write_text('{"address": "tcp://127.0.0.1:%d"}' % port)
        why = "an HTTP server answers there" if http else "no Dask scheduler answered"
        for kw, named in (({"scheduler": f"tcp://127.0.0.1:{port}"}, rf"--scheduler tcp://127.0.0.1:{port}"),
                          ({"scheduler_file": str(f)}, r"--scheduler-file .*scheduler.json: its scheduler \S+")):
            raised: list = []

            def attach():
                with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
                    try:
                        start_cluster(**kw).close()
                    except BaseException as exc:  # noqa: BLE001 - checked below
                        raised.append(exc)

            t0 = time.monotonic()
            t = threading.Thread(target=attach, daemon=True)  # a hang fails the test, not the suite
            t.start()
            t.join(60)
            assert not t.is_alive(), f"the attach to {kw} still hangs after 60 s"
            assert time.monotonic() - t0 < 30
            assert len(raised) == 1 and isinstance(raised[0], SchedulerUnreachableError), raised
            assert re.match(rf"{named}: {why}", str(raised[0])), str(raised[0])
    finally:
        stop()


def test_a_worker_address_given_as_the_scheduler_is_one_line():
    """``--scheduler`` with a worker's (or nanny's) address, copied from a log: the Dask
    handshake succeeds there, and the attach ended with Dask's traceback
    (``TypeError: Worker.identity() got an unexpected keyword argument 'n_workers'``).
    The probe asks the server what it is and names it."""
    from distributed import LocalCluster

    from gpu_sssp.pipeline.cluster import SchedulerUnreachableError

    with LocalCluster(n_workers=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        (worker,) = cluster.scheduler_info["workers"]
        with pytest.raises(SchedulerUnreachableError,
                           match=rf"^--scheduler {worker}: a Dask Worker listens there, not a scheduler"):
            start_cluster(scheduler=worker)


def test_the_probe_leaves_a_listening_scheduler_alone():
    """Where a scheduler listens, the probe's connection is a Dask handshake (a plain
    TCP connect logged 'closed before handshake completed' on the scheduler) and the
    attach goes on."""
    from distributed import LocalCluster

    from gpu_sssp.pipeline.cluster import probe_scheduler

    with LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        probe_scheduler(cluster.scheduler_address, "--scheduler X")


def test_an_attached_cluster_without_workers_is_waited_for_with_one_note(tmp_path):
    """A study attached to a scheduler with no worker planned for no devices and sat at
    0 sources with nothing said (GPU workers joining later got CPU batch sizes).  It
    now says so once and waits for the first worker."""
    import threading
    import time

    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study.run import study

    notes: list = []
    with LocalCluster(n_workers=0, processes=False, threads_per_worker=1, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            def join():
                while not notes:
                    time.sleep(0.05)
                cluster.scale(1)

            t = threading.Thread(target=join, daemon=True)
            t.start()
            summary = study("data/rome99.gr", random=3, seed=1, client=client, out=tmp_path / "s",
                            on_wait=notes.append)
            t.join(5)
    assert len(notes) == 1 and "no worker has joined" in notes[0], notes
    assert summary["complete"] and summary["sources_solved"] == 3, summary


def test_join_wait_limits_the_wait_for_a_first_worker():
    import dask
    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.cluster import ClusterHandle, SchedulerUnreachableError, describe_cluster

    with LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            with dask.config.set({"sssp.cluster.join-wait": 0.3}):
                with pytest.raises(SchedulerUnreachableError, match=r"no worker joined .* in 0.3 s"):
                    describe_cluster(ClusterHandle(client, None, "attached", "auto"), notice=lambda line: None)


def _busy(marker: str, seconds: int) -> None:
    """A task that keeps its worker process from closing for ``seconds`` (the GIL
    released, as the CPU phast sweeps do)."""
    import pathlib
    import time

    pathlib.Path(marker).touch()
    time.sleep(seconds)


def test_closing_a_local_cluster_with_a_busy_worker_prints_no_nanny_warning(tmp_path):
    """A study stopped while a worker is busy (Ctrl-C in all NY on CPU workers) closed the
    cluster with Dask's "Worker process still alive after 4.0 seconds, killing", one time
    stamped WARNING per worker between the study's lines.  It is teardown: logged at debug."""
    import logging
    import time

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    keep = Keep(level=logging.WARNING)
    nanny = logging.getLogger("distributed.nanny")
    nanny.addHandler(keep)
    try:
        with start_cluster(cpu_workers=1, dashboard=False) as handle:
            marker = tmp_path / "started"
            fut = handle.client.submit(_busy, str(marker), 12, pure=False)
            for _ in range(200):
                if marker.exists():
                    break
                time.sleep(0.05)
            assert marker.exists()
    finally:
        nanny.removeHandler(keep)
    del fut
    assert not [r.getMessage() for r in records if "still alive" in r.getMessage()]


def test_workers_of_another_environment_or_version_are_named_in_one_line():
    """``describe_cluster``'s check of what ``client.run(_worker_info, on_error="return")``
    brought back: a worker where ``gpu_sssp`` does not import, or of another gpu-sssp
    version, is refused naming it; a worker that left meanwhile is left out."""
    from distributed.comm.core import CommClosedError

    from gpu_sssp.pipeline import cluster as C

    mine = C._gpu_sssp_version()
    good = {"device": "cpu", "gpu_sssp": mine}
    workers = {"tcp://h:1": {"name": "a"}, "tcp://h:2": {"name": "b"}, "tcp://h:3": {"name": "c"}}
    assert C._check_worker_code({"tcp://h:1": good, "tcp://h:3": CommClosedError("gone")}, workers) \
        == {"tcp://h:1": good}
    with pytest.raises(C.WorkerEnvironmentError,
                       match=r"^1 of 2 workers cannot run this study's code \(b \(tcp://h:2\): "
                             r"ModuleNotFoundError\('No module named gpu_sssp.pipeline'\)\); start every worker"):
        C._check_worker_code({"tcp://h:1": good, "tcp://h:2": Exception(
            "ModuleNotFoundError('No module named gpu_sssp.pipeline')")}, workers)
    if mine != "unknown":
        with pytest.raises(C.WorkerEnvironmentError, match=rf"c \(tcp://h:3\): gpu-sssp 0.0.1a, the client {mine}"):
            C._check_worker_code({"tcp://h:1": good, "tcp://h:3": dict(good, gpu_sssp="0.0.1a")}, workers)

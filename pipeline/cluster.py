"""Start or attach the Dask cluster a study runs on; close only what was started.

Modes, first match wins:

1. ``scheduler`` address or ``scheduler_file``: attach to a running cluster (e.g.
   ``dask scheduler`` + ``dask cuda worker`` on each GPU node).  Nothing is closed
   but the client.
2. ``gpus`` given, or a GPU visible here and ``dask_cuda`` importable (and no
   ``cpu_workers``): a ``LocalCUDACluster``, one worker per GPU
   (``gpus="0,1"`` becomes ``CUDA_VISIBLE_DEVICES``) with ``sssp.cluster.threads-per-gpu``
   task threads (default 3: a batch's files are written while the next batch solves).
3. Otherwise a local CPU ``LocalCluster`` of ``cpu_workers`` processes with one
   thread each, solving with the CPU backend.

The client process never creates a CUDA context (GPU counting goes through NVML).
"""
from __future__ import annotations

import contextlib
import errno
import ipaddress
import json
import logging
import os
import signal
import socket
import threading
import time
import warnings
from dataclasses import dataclass, field

from gpu_sssp.kernels.errors import GPUUnavailableError, SsspError, UsageError, comma_items, counted, opt, render
from gpu_sssp.pipeline.config import describe_setting, refuse_setting, setting, valid_address, valid_host
from gpu_sssp.pipeline.errors import StudyError

log = logging.getLogger(__name__)


class ClusterStartError(SsspError, RuntimeError):
    """A local cluster whose workers did not start (a worker process killed or out of
    memory while starting): one line, exit status 1."""

    exit_code = 1


class ReportNotWrittenError(SsspError, OSError):
    """Dask's performance report (``--report``) could not be written at the end of its
    block (a full disk, a folder gone): one line, exit status 2, as the machine's other
    limits.  Raised as itself, so that a caller can tell it from the study's failures."""

    exit_code = 2


class SchedulerUnreachableError(SsspError, ConnectionError):
    """An attached study's scheduler address where nothing listens (every connection
    refused for :data:`REFUSED_GRACE_S`), whose host name does not resolve, or where what
    listens is no Dask scheduler (an HTTP server, or no handshake reply): one line, exit
    status 1, instead of Dask's 30 s of retries or its endless wait for a handshake."""

    exit_code = 1


class WorkerEnvironmentError(SsspError, RuntimeError):
    """Attached workers that cannot run this study's code: ``gpu_sssp`` does not import
    there (another Python environment or ``PYTHONPATH``), or it is another version of
    gpu-sssp than the client's.  One line naming the workers, exit status 1, before the
    study folder is written (Dask's traceback came from the first call on the workers)."""

    exit_code = 1


class StudyRunningError(StudyError):
    """The same study (one study id: the same graph, sources and settings) already runs
    on the attached cluster into another folder: its task keys are this run's, so this
    run's tasks would be that run's (their files written into its folder).  One line
    naming that folder, exit status 2 (as a folder held by another run), before any
    task is submitted."""


class SchedulerLostError(SsspError, ConnectionError):
    """The client lost its scheduler during a study (the scheduler stopped, was
    restarted, or the network went): Dask cancels every task with
    ``scheduler-connection-lost``.  One line, exit status 1; the batches journaled so
    far stay, and ``--resume`` continues once a scheduler is back."""

    exit_code = 1


def scheduler_lost(client, exc: BaseException) -> bool:
    """Whether ``exc``, raised while a study waited on its tasks, means the client lost
    its scheduler (rather than a task's own failure)."""
    from distributed.comm.core import CommClosedError

    # Dask cancels every task with this reason (FutureCancelledError, or a CancelledError
    # with the reason in its text in older versions)
    if "scheduler-connection-lost" in str(exc):
        return True
    if isinstance(exc, (CommClosedError, OSError, TimeoutError)):
        return getattr(client, "status", "running") != "running"
    return False


#: seconds an attach retries a refused connection before saying nothing listens there
#: (a scheduler started a moment ago may not listen yet; ``--scheduler-file`` appears
#: only once it does)
REFUSED_GRACE_S = 3.0


@contextlib.contextmanager
def _without_cancelled_reconnect():
    """Inside the block, ``distributed.client`` drops its records of the reconnection
    that closing a client which lost its scheduler calls off: the cancelled coroutine
    (an ERROR with a traceback) and "Failed to reconnect to scheduler after 30.00
    seconds" (the loop's end, whatever the time); its other records pass."""
    import asyncio

    class _Drop(logging.Filter):
        def filter(self, record):
            exc = record.exc_info[1] if record.exc_info else None
            if isinstance(exc, asyncio.CancelledError):
                return False
            return not str(record.msg).startswith("Failed to reconnect to scheduler")

    logger = logging.getLogger("distributed.client")
    drop = _Drop()
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


@dataclass
class ClusterHandle:
    """A connected client and, when this process started it, the cluster.

    Attributes
    ----------
    client : distributed.Client
    cluster : distributed.SpecCluster or None
        ``None`` when attached to an existing scheduler.
    mode : {"attached", "local-cuda", "local-cpu", "none"}
        ``none``: no cluster and no client (``client`` None), for a resumed study with
        nothing left to solve (``pipeline.study.run.study``).
    backend : {"auto", "gpu", "cpu"}
        Backend tasks ask for (``auto`` on attached clusters: each worker decides).
    """

    client: object
    cluster: object | None
    mode: str
    backend: str
    info: dict = field(default_factory=dict)

    @property
    def dashboard_link(self) -> str | None:
        """The dashboard's URL; ``None`` where there is none (:meth:`dashboard`)."""
        return self.dashboard()["link"]

    def dashboard(self) -> dict:
        """The scheduler's dashboard: ``{"link", "note", "study_page"}``.  ``link``: its
        URL, or None with ``note`` saying why there is none (no note where this process
        started a cluster without one, as asked: nothing to say).  ``study_page``: the
        study's own page (``pipeline.dashboard``), where the scheduler can serve it.

        Dask's ``client.dashboard_link`` is the scheduler's HTTP server's port, which it
        reports as its "dashboard" service whether or not it serves one: a ``dask scheduler
        --no-dashboard`` (or one without bokeh) still answers health checks and metrics
        there, and its link's ``/status`` was a 404.  The scheduler is asked which it is
        (:func:`scheduler_dashboard`); where it cannot be asked, the link is loaded once
        (a 404 is no dashboard; no answer leaves Dask's link).  A dashboard under a prefix
        (``dask scheduler --dashboard-prefix /x``) gets its link's ``/status`` there."""
        none = {"link": None, "note": None, "study_page": None}
        if not self.info.get("dashboard", True):
            return none
        try:
            link = self.client.dashboard_link
        except Exception as exc:
            log.debug("no dashboard link: %s", exc)
            link = None
        link = self._local_link(link)
        if not link:
            return dict(none, note="the scheduler names no dashboard")
        said = scheduler_dashboard(self.client)
        if said is None:  # not asked (a scheduler that refuses to run functions, ...)
            if _not_found(link):
                return dict(none, note=NO_DASHBOARD)
            return {"link": link, "note": None, "study_page": study_page(link)}
        path = said.get("path")
        if not path:
            return dict(none, note=NO_BOKEH if said.get("why") == "bokeh" else NO_DASHBOARD)
        if path != "/status" and link.endswith("/status"):  # a prefix Dask's link leaves out
            link = link[: -len("/status")] + path
        return {"link": link, "note": None,
                "study_page": study_page(link, path) if said.get("package", True) else None}

    def _local_link(self, link):
        """A local cluster's dashboard link naming where the dashboard listens
        (:func:`_link_host`), with the port it got; ``link`` otherwise.  Where Dask gave
        none though this process serves a dashboard (a ``distributed.dashboard.link``
        template naming an unknown value: Dask logs a warning and the study said "the
        scheduler names no dashboard"), the plain ``http://HOST:PORT/status``."""
        where = self.info.get("link_host")
        if self.cluster is None or not self.info.get("dashboard", True) or (link and not where):
            return link
        try:
            port = self.cluster.scheduler.http_server.port
            if not where:
                from distributed.comm.addressing import parse_address, parse_host_port

                where = parse_host_port(parse_address(self.cluster.scheduler_address)[1])[0]
        except Exception as exc:  # not an in-process scheduler, or Dask moved: its own link
            log.debug("the dashboard's link is Dask's: %s", exc)
            return link
        if link:
            try:
                from distributed.utils import format_dashboard_link

                return format_dashboard_link(_bracket(where), port)
            except Exception as exc:  # the user's template: the plain link below
                log.debug("the dashboard link template failed: %s", exc)
        return f"http://{_bracket(where)}:{port}/status"

    def close(self) -> None:
        """Close the client, and the cluster only if this process started it.

        A cluster this process started is closed workers first; a worker whose heartbeat
        to the scheduler is under way then logs Dask's "Failed to communicate with
        scheduler during heartbeat" with a traceback (seen after a Ctrl-C).  That is
        teardown noise, not a failure of the study: the workers' ``distributed.worker``
        log is lowered to CRITICAL first (best effort, workers that are gone are skipped).

        A Ctrl-C (``KeyboardInterrupt``, also SIGTERM's) during the close stops the
        waiting: it is raised at once, and Dask's own close at the interpreter's exit
        is called off (it waited 10 s for the close the Ctrl-C had cancelled); the worker
        processes, daemonic children of this one, end with it."""
        if self.client is None:  # mode "none": nothing to close
            return
        interrupted = False
        try:
            if self.cluster is not None:
                try:
                    self.client.run(_quiet_worker_teardown, on_error="ignore")
                except Exception as exc:  # closing goes on
                    log.debug("workers' teardown log not quieted: %s", exc)
            if getattr(self.client, "status", "running") == "connecting":
                # it lost its scheduler (pipeline.study.run): closing cancels Dask's
                # reconnection, which logs that as an ERROR with a traceback
                with _without_cancelled_reconnect():
                    self.client.close()
            else:
                self.client.close()
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            if self.cluster is not None:
                if interrupted:
                    _abandon(self.cluster)
                else:
                    try:
                        with _quiet_nanny_kill():
                            self.cluster.close()
                    except KeyboardInterrupt:
                        _abandon(self.cluster)
                        raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _abandon(cluster) -> None:
    """A cluster whose close was interrupted: Dask's exit hook
    (``distributed.deploy.spec.close_clusters``) is not to close it again, which waited
    its 10 s timeout for the close the interrupt cancelled."""
    try:
        cluster.shutdown_on_close = False
    except Exception as exc:
        log.debug("cluster not abandoned: %s", exc)
    # its nannies then log, as the processes end with this one, that a worker's exit
    # status "was already read": noise of a close called off
    logging.getLogger("distributed.process").setLevel(logging.ERROR)


@contextlib.contextmanager
def _nanny_warnings_taken(matches, take):
    """While the block runs, the local nannies' WARNING records whose message
    ``matches(text)`` go to ``take(text)`` (logged at debug, or said otherwise) instead of
    Dask's time-stamped log line; every other record passes."""
    nanny = logging.getLogger("distributed.nanny")

    class _Taken(logging.Filter):
        def filter(self, record):
            if record.levelno == logging.WARNING and matches(record.getMessage()):
                take(record.getMessage())
                return False
            return True

    f = _Taken()
    nanny.addFilter(f)
    try:
        yield
    finally:
        nanny.removeFilter(f)


def _quiet_nanny_kill():
    """While this process closes the local cluster it started: its nannies' "Worker
    process still alive after 4.0 seconds, killing" (a worker busy in a task when a study
    stops: Ctrl-C in an all-NY study on CPU workers printed it once per worker, with a
    time stamp, between the study's lines) is teardown, not a failure: logged at debug."""
    return _nanny_warnings_taken(lambda text: "still alive after" in text,
                                 lambda text: log.debug("local cluster close: %s", text))


def worker_restarts_said(say):
    """While a study runs on a local cluster, its nannies' "Restarting worker
    (status=Status.running)" (a worker process that ended: killed, or out of memory) is
    said through ``say(line)`` in the study's words, once per restart, instead of Dask's
    time-stamped log line between the study's progress lines."""

    def said(text):
        log.debug("local cluster: %s", text)
        try:
            say("a worker process ended while the study ran (killed, or out of memory); its nanny starts "
                "a new one, and the batches it held are solved again (finished batches are kept)")
        except Exception as exc:  # (never in the nanny's way)
            log.debug("worker restart not said: %s", exc)

    return _nanny_warnings_taken(lambda text: text.startswith("Restarting worker"), said)


def _quiet_worker_teardown() -> None:
    """On a worker of a cluster being closed: only critical messages from its log."""
    logging.getLogger("distributed.worker").setLevel(logging.CRITICAL)


def _dask_cuda_available() -> bool:
    try:
        import dask_cuda  # noqa: F401  (availability check)
    except Exception:
        return False
    return True


def parse_gpus(gpus) -> str:
    """``"0,1"`` / ``[0, 1]`` -> ``"0,1"`` (validated)."""
    if isinstance(gpus, (list, tuple)):
        gpus = ",".join(str(g) for g in gpus)
    items = comma_items(gpus, "--gpus")
    if not items:
        raise UsageError(f"{opt('--gpus')} needs a list of device numbers like 0,1, got {gpus!r}")
    for g in items:
        if not (g.isascii() and g.isdigit()) and not g.startswith(("GPU-", "MIG-")):  # not "\u0663" nor "\u00b2"
            raise UsageError(f"{opt('--gpus')}: {g!r} is not a device number or UUID")
    if len(set(items)) != len(items):
        raise UsageError(f"{opt('--gpus')} lists a device twice: {gpus!r}")
    return ",".join(items)


#: the schemes of Dask's own sockets, which the attach probes (:func:`probe_scheduler`);
#: a scheduler address may also name another scheme Dask has a comm backend for here
#: (``ucx://`` of a dask-cuda cluster started with ``--protocol ucx``, with
#: distributed-ucxx installed), which Dask's client connects to unprobed
_SCHEMES = ("tcp", "tls", "ws", "wss")


def _address_problem(address: str) -> str | None:
    """Why ``address`` is no scheduler address a client can connect to, or None:
    ``SCHEME://HOST:PORT`` or ``HOST:PORT`` (``tcp``, ``tls``, ``ws``, ``wss``, or any other
    scheme Dask has a comm backend for here, e.g. ``ucx``: a host and a port; ``inproc`` is
    of one process only)."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, loc = parse_address(address)
        if scheme == "inproc":
            raise ValueError("an inproc address belongs to one process")
        if scheme not in _SCHEMES:  # http://, a typo ...: Dask's ValueError or TypeError traceback came later
            try:
                backend = get_backend(scheme)  # (ucx://, or a backend a package registers)
            except Exception:  # noqa: BLE001 - ValueError, or a backend that fails to load
                raise ValueError(f"scheme {scheme!r}: a client connects with {', '.join(_SCHEMES)} "
                                 "(or a scheme a Dask comm package installed here adds, e.g. ucx with "
                                 "distributed-ucxx)") from None
            try:  # a backend that cannot work here (Dask's own ucx without distributed-ucxx) says so
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    backend.get_address_host(loc)
            except Exception as exc:  # noqa: BLE001
                why = " ".join(str(exc).split()) or type(exc).__name__
                raise ValueError(f"scheme {scheme!r}: Dask cannot connect with it here ({why})") from None
        host, _port = parse_host_port(loc)
        if not host:
            raise ValueError("no host")
    except ValueError as exc:
        return str(exc)
    return None


def check_scheduler_address(address: str) -> None:
    """Refuse, as a usage error, a ``--scheduler`` that is no address a client can
    connect to (Dask's own parsing raised ``ValueError`` with a traceback, after the graph
    was read): :func:`_address_problem`."""
    problem = _address_problem(address)
    if problem is not None:
        raise UsageError(f"{opt(f'--scheduler {address!r}')}: not a scheduler address ({problem}); "
                         "expected e.g. tcp://HOST:8786")


def _nothing_there(address: str) -> str | None:
    """Why a TCP scheduler ``address`` cannot answer, asked of the network directly:
    ``"unresolved"`` (its host name does not resolve), ``"refused"`` (every address of
    it refuses a connection: nothing listens at the port), else None (something
    listens, or the network does not say: a filtered host times out)."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, loc = parse_address(address)
        if scheme not in ("tcp", "tls", "ws", "wss"):
            return None
        host, port = parse_host_port(loc)
    except ValueError:
        return None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return "unresolved"
    except OSError:
        return None
    for family, kind, proto, _name, sockaddr in infos:
        try:
            with socket.socket(family, kind, proto) as sock:
                sock.settimeout(1.0)
                sock.connect(sockaddr)
        except ConnectionRefusedError:
            continue
        except OSError:
            return None
        return None  # it listens now (a scheduler that has just started)
    return "refused" if infos else None


def _speaks_http(address: str) -> bool:
    """Whether an HTTP server answers at a ``tcp://`` ``address`` (a dashboard's port
    given as the scheduler's): asked with a plain ``GET``, for at most 2 s."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, loc = parse_address(address)
        if scheme != "tcp":
            return False
        host, port = parse_host_port(loc)
        with socket.create_connection((host, port), timeout=2.0) as sock:
            sock.sendall(b"GET / HTTP/1.0\r\nHost: " + host.encode("idna") + b"\r\n\r\n")
            return sock.recv(5) == b"HTTP/"
    except (OSError, ValueError, UnicodeError):
        return False


#: seconds the probe waits for a scheduler's handshake once a connection is open before
#: asking whether an HTTP server (a dashboard) listens there instead
HANDSHAKE_FIRST_WAIT_S = 2.0


def probe_scheduler(address: str, named: str, *, grace: float | None = None) -> None:
    """Fail fast, in one line, where an attach cannot succeed: nothing listens at
    ``address``, its host does not resolve, or what listens there is no Dask scheduler
    (Dask's client waits for a handshake's reply without any limit, ``Client(timeout=)``
    included: an HTTP server - the dashboard's port given as the scheduler's - or a
    stopped scheduler hung the study silently; a worker's or a nanny's address ended in
    Dask's traceback: the probe asks the server's ``identity``).  Dask's client retries refused
    connections for ``distributed.comm.timeouts.connect`` (30 s) before its own message.

    First a Dask connection with a handshake, closed at once (the scheduler logs
    nothing), for at most ``grace`` seconds (default :data:`REFUSED_GRACE_S`: Dask
    retries a refused connection meanwhile, for a scheduler that is still starting);
    only when that fails is the network asked why (:func:`_nothing_there`).  A
    connection whose handshake gets no reply in :data:`HANDSHAKE_FIRST_WAIT_S` is asked
    whether it speaks HTTP (refused at once), else given the connect timeout
    (``distributed.comm.timeouts.connect``) to answer before it is refused.  Anything
    else (a slow or filtered network, a TLS scheduler that wants credentials) lets the
    attach go on under Dask's own timeout.  ``named``: the option, as the message shows it.

    Raises
    ------
    SchedulerUnreachableError
    """
    import dask
    from dask.utils import parse_timedelta
    from distributed.comm import connect
    from distributed.comm.addressing import parse_address
    from distributed.security import Security

    try:
        scheme = parse_address(address)[0]
    except ValueError:
        scheme = ""
    if scheme not in _SCHEMES:  # (ucx://: not a socket the probe can ask; Dask's client connects)
        return
    # the client's own TLS settings (distributed.comm.tls.*): without them a tls://
    # scheduler's connect failed with a TypeError (no ssl_context), read as "not Dask's
    # protocol", and refused an attach that Client() makes
    try:
        conn_args = Security().get_connection_args("client")
    except Exception:  # noqa: BLE001 - unreadable TLS settings: Client() says so in its words
        return
    grace = REFUSED_GRACE_S if grace is None else float(grace)
    patience = max(grace, parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"),
                                          default="seconds"))

    kind: list = []  # what answered, where the handshake succeeded
    errors: list = []  # why Dask's connect failed, where it did

    def attempt(limit: float) -> str:
        """``"ok"``, ``"failed"`` (Dask's connect raised) or ``"silent"`` (no handshake
        reply within ``limit`` seconds of the retries)."""
        outcome: list = []

        async def handshake():
            import asyncio

            try:
                comm = await asyncio.wait_for(connect(address, timeout=grace, **conn_args),
                                              timeout=grace + limit)
            except asyncio.TimeoutError:  # (before OSError: TimeoutError is one)
                outcome.append("silent")
            except Exception as exc:  # noqa: BLE001 - asked about below
                outcome.append("failed")
                errors.append(exc)
            else:
                outcome.append("ok")
                try:  # a worker's or a nanny's address given for the scheduler's?
                    await asyncio.wait_for(comm.write({"op": "identity", "reply": True}), limit)
                    reply = await asyncio.wait_for(comm.read(), limit)
                    if isinstance(reply, dict) and isinstance(reply.get("type"), str):
                        kind.append(reply["type"])
                except Exception:  # noqa: BLE001 - not asked: the attach goes on as before
                    pass
                finally:
                    await comm.close()

        def run():  # its own thread and event loop: the caller may be inside one (a notebook)
            import asyncio

            try:
                asyncio.run(handshake())
            except Exception:  # noqa: BLE001
                outcome.append("failed")

        t = threading.Thread(target=run, name="sssp-scheduler-probe", daemon=True)
        t.start()
        t.join(grace + limit + 5.0)
        return outcome[0] if outcome else "silent"

    result = attempt(HANDSHAKE_FIRST_WAIT_S)
    if result == "silent":
        if _speaks_http(address):
            raise SchedulerUnreachableError(
                f"{named}: an HTTP server answers there, not a Dask scheduler (a dashboard's port? "
                "the scheduler's own address is the one its scheduler file names, port 8786 by default)")
        result = attempt(patience)
        if result == "silent":
            raise SchedulerUnreachableError(
                f"{named}: no Dask scheduler answered in {patience:g} s (something accepts "
                "connections there: another service on that port, or a scheduler that is stopped "
                "or stuck)")
    if result == "ok":
        if kind and kind[0] in ("Worker", "Nanny"):
            raise SchedulerUnreachableError(
                f"{named}: a Dask {kind[0]} listens there, not a scheduler (the scheduler's address is "
                "the one its scheduler file names, or that `dask scheduler` logs as 'Scheduler at:')")
        return
    why = _nothing_there(address)
    if why is None and errors and not isinstance(errors[-1], OSError) and scheme in ("tcp", "ws"):
        # (tls, wss: a handshake that fails for want of credentials, or other TLS settings,
        # is the client's to report, as the docstring says)
        # something accepted the connection and answered, but not in Dask's protocol: its
        # first bytes read as a frame length made Dask's client allocate exabytes ("Unable
        # to allocate 3.07 EiB", a MemoryError exit 2) or fail to decode, a traceback
        if _speaks_http(address):
            raise SchedulerUnreachableError(
                f"{named}: an HTTP server answers there, not a Dask scheduler (a dashboard's port, "
                "or a proxy? the scheduler's own address is the one its scheduler file names, "
                "port 8786 by default)")
        raise SchedulerUnreachableError(
            f"{named}: what answers there is not a Dask scheduler (its reply is not Dask's protocol: "
            f"{type(errors[-1]).__name__}); check the address and port")
    if why == "refused":
        raise SchedulerUnreachableError(
            f"{named}: nothing listens there (connection refused for {grace:g} s); start the scheduler "
            f"first (`dask scheduler --scheduler-file FILE`, then {opt('--scheduler-file FILE')} here) or check "
            "the address")
    if why == "unresolved":
        raise SchedulerUnreachableError(f"{named}: the host name does not resolve here")


def start_cluster(*, scheduler: str | None = None, scheduler_file: str | None = None,
                  gpus=None, cpu_workers: int | None = None, dashboard: bool = True,
                  host: str | None = None, dashboard_address: str | None = None,
                  silence_logs: bool = True, **cluster_options) -> ClusterHandle:
    """Connect a client to a cluster chosen as described in the module docstring.

    Parameters
    ----------
    scheduler, scheduler_file : str, optional
        Attach to this scheduler.
    gpus : str or list of int, optional
        Local GPUs for a ``LocalCUDACluster``.
    cpu_workers : int, optional
        Size of a local CPU cluster (default: config ``sssp.cluster.cpu-workers``,
        else one worker per core).
    dashboard : bool
        Serve the dashboard, on ``dashboard_address``.  ``False`` serves none: the
        scheduler's HTTP server (which Dask always starts) gets no routes at all and
        listens on ``host`` at a random port.
    host : str, optional
        Interface a local cluster's scheduler and workers listen on (default: config
        ``sssp.cluster.host``, ``127.0.0.1``: nothing outside this machine can reach
        them).  ``0.0.0.0`` opens them to the network, unauthenticated: see the
        README on ``distributed.security`` before doing so.
    dashboard_address : str, optional
        ``HOST:PORT`` of the dashboard (default: config
        ``sssp.cluster.dashboard-address``, else ``HOST:8787`` with ``host``'s
        interface; another free port when 8787 is taken).  ``:8787`` means every
        interface.
    silence_logs : bool
        Keep workers' log lines below WARNING off the terminal.

    Raises
    ------
    ValueError
        Contradictory options, bad device list, a ``host`` or ``dashboard_address`` of
        no address form, whose host name does not resolve here or that is not an
        address of this machine, a ``scheduler_file`` that is not a Dask scheduler
        file (``UsageError``; a
        ``SettingError`` naming the key where the value is dask config's:
        :func:`listen_addresses`).
    GPUUnavailableError
        ``gpus`` asked for without a visible GPU or without ``dask_cuda`` (a
        ``RuntimeError``; the command line exits with status 4).
    """
    from distributed import Client

    quiet_in_spawned_import()
    given = [opt(k) for k, v in (("--scheduler", scheduler), ("--scheduler-file", scheduler_file),
                                 ("--gpus", gpus), ("--cpu-workers", cpu_workers)) if v is not None]
    if len(given) > 1:
        raise UsageError(f"choose one cluster option, got {' and '.join(given)}")
    if scheduler is not None or scheduler_file is not None:
        if host is not None or dashboard_address is not None:
            raise UsageError(f"{opt('--host')} and {opt('--dashboard-address')} apply to a cluster started here, "
                             f"not to one attached with {opt('--scheduler')} or {opt('--scheduler-file')}")
        if scheduler_file is not None:
            scheduler = read_scheduler_file(scheduler_file)
            named = f"{opt(f'--scheduler-file {os.fspath(scheduler_file)}')}: its scheduler {scheduler}"
        else:
            check_scheduler_address(scheduler)
            named = opt(f"--scheduler {scheduler}")
        probe_scheduler(scheduler, named)
        try:
            client = Client(address=scheduler)
        except OSError as exc:
            # no answer at all (a host that is down, a firewall that drops the connection):
            # Dask's "Timed out trying to connect ... after 30 s" named no option, exit 2
            raise SchedulerUnreachableError(
                f"{named}: no answer ({exc}); a host that is down or a firewall that drops the "
                "connection? (distributed.comm.timeouts.connect sets how long this waits)") from exc
        loose = [] if scheduler_file is None else _writable_by_others(scheduler_file)
        return _warn_exposed(ClusterHandle(client, None, "attached", "auto", {"exposed": loose}))

    level = logging.WARNING if silence_logs else logging.INFO
    host_from = opt(f"--host {host}") if host is not None else describe_setting("cluster.host")
    if dashboard_address is not None:
        dash_from = opt(f"--dashboard-address {dashboard_address}")
    elif setting("cluster.dashboard-address", None, default=None) is not None:
        dash_from = describe_setting("cluster.dashboard-address")
    else:
        dash_from = None  # on the host's interface: named by host_from
    host, dash = listen_addresses(host, dashboard_address, dashboard)
    exposed = _exposed(host, dash, dashboard, host_from=host_from, dash_from=dash_from)
    info = {"dashboard": dashboard, "exposed": exposed, "link_host": _link_host(host, dash, dashboard)}
    # checked whichever cluster starts: a bad sssp.cluster.cpu-workers setting went
    # unnoticed on a GPU host (where it sizes nothing) until the day the study ran on CPUs
    n = _cpu_worker_count(cpu_workers)
    if cpu_workers is None:
        from gpu_sssp import kernels

        want_gpu = gpus is not None or (kernels.device_count() > 0 and _dask_cuda_available())
        if gpus is not None and kernels.device_count() == 0:
            # a GPU request that cannot be met here: exit status 4, as for a GPU method
            raise GPUUnavailableError(f"{opt('--gpus')}: no CUDA device is visible here (or CuPy is missing); "
                                      f"use {opt('--cpu-workers N')} for a CPU cluster")
        if want_gpu:
            try:
                from dask_cuda import LocalCUDACluster
            except ImportError as exc:
                raise GPUUnavailableError(
                    f"{opt('--gpus')} needs dask-cuda ({exc}); install the 'gpu' extra or use {opt('--cpu-workers N')}"
                ) from exc
            # three task threads: one chunk's files are written while the next chunk runs
            # on the GPU and a third is queued behind it; a solve holds the worker's GPU
            # turn only while it enqueues, so kernel times do not overlap
            threads = setting("cluster.threads-per-gpu", None, default=3)  # checked: a whole number >= 1
            kw = dict(host=_bracket(host), dashboard_address=_dask_dashboard(dash), silence_logs=level,
                      threads_per_worker=threads,
                      scheduler_kwargs={"dashboard": dashboard}, preload=_worker_preloads())
            if gpus is not None:
                kw["CUDA_VISIBLE_DEVICES"] = parse_gpus(gpus)
            kw.update(cluster_options)
            try:
                return _warn_exposed(_start_local(LocalCUDACluster, kw, dashboard, "local-cuda", "gpu", info))
            except ValueError as exc:  # dask-cuda (NVML) refuses a device number or UUID
                if gpus is not None and "device index" in str(exc).lower():
                    raise UsageError(f"{opt('--gpus ' + kw['CUDA_VISIBLE_DEVICES'])}: {exc} (this machine shows "
                                     f"{counted(kernels.device_count(), 'GPU')}, numbered from 0; "
                                     "`nvidia-smi -L` lists them)") from None
                raise
    from distributed import LocalCluster

    # preload: each worker loads the CPU phast kernels in the background as it starts
    # (pipeline.warmup), overlapping Numba's one-time cost with the rest of the start-up
    kw = dict(n_workers=n, threads_per_worker=1, processes=True, host=_bracket(host),
              dashboard_address=_dask_dashboard(dash),
              silence_logs=level, scheduler_kwargs={"dashboard": dashboard},
              preload=_worker_preloads("gpu_sssp.pipeline.warmup"))
    kw.update(cluster_options)
    return _warn_exposed(_start_local(LocalCluster, kw, dashboard, "local-cpu", "cpu", info))


def _worker_preloads(*extra: str) -> list[str]:
    """The preload modules of a local cluster's workers: ``extra`` and this module
    (:func:`dask_setup`; ``LocalCUDACluster`` appends its own ``dask_cuda.initialize``)."""
    return [*extra, __name__]


def dask_setup(worker=None) -> None:
    """Preload hook (:func:`_worker_preloads`): a local cluster's worker ignores SIGINT.

    A Ctrl-C on the terminal reaches every process of the foreground group, the workers
    too: the client stops the study and closes the cluster, which ends them, while each
    worker's own ``KeyboardInterrupt`` printed Dask's tracebacks ("Process Dask Worker
    process (from Nanny): Traceback ...") after the command's one line."""
    if threading.current_thread() is threading.main_thread():
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except (ValueError, OSError):  # not settable here
            pass
    # a graph plugin that fails to load here is said by the study's client, in one line
    # naming this worker (its traceback logged there with -v): not on the terminal the
    # client shares with its local workers too, once per worker
    from gpu_sssp.pipeline.plugins import load_log

    load_log.setLevel(logging.CRITICAL)


def _start_local(cls, kw: dict, dashboard: bool, mode: str, backend: str, info: dict) -> ClusterHandle:
    """Start a local cluster of ``cls`` and connect a client to it.

    Two things of Dask's start-up are kept off the terminal:

    - Ctrl-C (or SIGTERM) while it starts: raised in the middle of ``LocalCluster``'s
      constructor, it left a half-started cluster that Dask's ``atexit`` hook then
      failed to close, printing some 28 lines ("Exception ignored in atexit callback
      ... AssertionError: Status.init") after the command's "stopped: interrupted".
      The signal is held back until the cluster (and its client) are up
      (:func:`_signals_held`), the cluster is then closed the ordinary way and the
      signal delivered.  A second Ctrl-C while the first is held is not held (a start-up
      that hangs can still be left): the half-started cluster is then dropped from
      Dask's ``atexit`` list, its worker processes end with this one.
    - Dask's ``UserWarning: Port 8787 is already in use ... Hosting the HTTP server on
      port N instead``: the study prints the dashboard's real address itself.
    """
    from distributed import Client
    from distributed.deploy.spec import SpecCluster

    _refuse_unreadable_main(kw)
    before = set(SpecCluster._instances)
    cluster = client = None
    with _signals_held() as held:
        try:
            with _http_routes(dashboard), warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
                cluster = cls(**kw)
                client = Client(cluster)
        except BaseException as exc:
            if cluster is not None:  # the client did not connect
                _close_quietly(ClusterHandle(client, cluster, mode, backend))
            else:  # interrupted (a second Ctrl-C) or failed inside the constructor
                for c in set(SpecCluster._instances) - before:
                    SpecCluster._instances.discard(c)
                    if isinstance(exc, KeyboardInterrupt):
                        _stop_starting(c)
            if isinstance(exc, RuntimeError) and "failed to start" in str(exc):
                # a worker process that died while starting (killed, out of memory): Dask's
                # "Nanny failed to start." came out as a bug's traceback
                why = "; ".join(dict.fromkeys(str(e).strip() for e in (exc, exc.__cause__) if e is not None))
                unguarded = _unguarded_main_line()
                if unguarded:  # each worker ran the script's cluster start again: not by chance
                    raise ClusterStartError(
                        f"the local cluster did not start ({why}): its worker processes import the main "
                        f"script again (multiprocessing's spawn), and {unguarded} starts the cluster outside "
                        "'if __name__ == \"__main__\":'; put the script's work under that guard") from None
                raise ClusterStartError(f"the local cluster did not start ({why}): a worker process ended "
                                        "while starting; run the command again") from exc
            raise
        handle = ClusterHandle(client, cluster, mode, backend, info)
        if held:  # interrupted while starting: close it, then the signal is delivered
            _close_quietly(handle)
    return handle


def _refuse_unreadable_main(kw: dict) -> None:
    """Refuse, before any worker is started, a local cluster of worker processes spawned
    from a main script they cannot read again (``python - <<EOF``: ``<stdin>``):
    multiprocessing's spawn runs the main script in every worker, whose start then failed
    on ``FileNotFoundError: .../<stdin>`` (a traceback from each), and the study ended
    with "a worker process ended while starting; run the command again" - which fails
    the same way.  ``python -c`` and a notebook have no main file and are not affected."""
    import sys

    if kw.get("processes", True) is False:
        return
    try:
        import dask

        if dask.config.get("distributed.worker.multiprocessing-method", "spawn") == "fork":
            return
    except Exception:  # (best effort: the start says what it meets)
        return
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if getattr(getattr(main, "__spec__", None), "name", None) or not path or os.path.isfile(path):
        return  # (python -m: the workers import it by name)
    raise ClusterStartError(
        f"a local cluster's worker processes run the main script again as they start (multiprocessing's "
        f"spawn), and this one ({path}) is not a file they can read (a script read from standard input): "
        "save it to a file, its work under 'if __name__ == \"__main__\":', or run it with python -c")


def quiet_in_spawned_import() -> None:
    """End this process quietly (``SystemExit(1)``, no traceback) where it is a worker
    process importing the main script (``__mp_main__``, multiprocessing's spawn) and that
    import is what calls here: a script that starts a study or a cluster outside ``if
    __name__ == "__main__":`` ran it again in each worker, which printed a traceback of
    its own - a study's "in use by another study run" about the folder the parent holds -
    before the parent's one error (:func:`_unguarded_main_line`).  A call made later in
    such a process (a function a pool runs) is not affected."""
    import sys

    # (multiprocessing runs the script with run_name "__mp_main__" and makes it
    # sys.modules["__main__"] only once it has run)
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__mp_main__":
            raise SystemExit(1)  # the parent, whose worker this is, says why
        frame = frame.f_back


def _unguarded_main_line() -> str | None:
    """``FILE:LINE`` of the main script's top-level statement that is starting a local
    cluster outside ``if __name__ == "__main__":``, where worker processes are spawned
    (Dask's default ``distributed.worker.multiprocessing-method``): each worker then runs
    that statement again as it imports the script (``__mp_main__``), and fails to start
    (Dask says only "Nanny failed to start"), whatever is tried again.  ``None`` where
    the start is guarded, comes from no script (``python -c``, a notebook), workers are
    forked, or the script cannot be read."""
    import ast
    import sys

    try:
        import dask

        if dask.config.get("distributed.worker.multiprocessing-method", "spawn") == "fork":
            return None
        main = sys.modules.get("__main__")
        path = getattr(main, "__file__", None)
        if not path or not str(path).endswith(".py"):
            return None
        frame = sys._getframe(1)
        while frame is not None and not (frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"):
            frame = frame.f_back
        if frame is None:
            return None
        line = frame.f_lineno
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(), path)
        for node in ast.walk(tree):
            if (isinstance(node, ast.If) and node.body
                    and ast.unparse(node.test).replace("'", '"') in ('__name__ == "__main__"', '"__main__" == __name__')
                    and node.body[0].lineno <= line <= node.body[-1].end_lineno):
                return None
        return f"{path}:{line}"
    except Exception:  # (a best-effort diagnosis: the plain message then)
        return None


#: how long a second Ctrl-C waits for worker processes being created (a spawn writes its
#: start-up data to the new process: milliseconds) before the command ends anyway
_SPAWN_DRAIN_S = 10.0


def _stop_starting(cluster) -> None:
    """A local cluster whose start a second Ctrl-C left: no worker process is left half
    created when this process ends.

    Dask creates each worker process from a thread of its own (``AsyncProcess``'s
    message thread): the new process is spawned, then sent its start-up data through
    a pipe.  This process ending between the two (the interpreter's exit stops daemon
    threads where they are) left the new process reading an empty pipe, and it printed
    ``EOFError: Ran out of input`` with its traceback (and the resource tracker a
    "leaked semaphore" warning) after the command's one line.  So: the cluster's event
    loop is parked (no further worker is begun, no nanny restarts a worker that ends),
    then every process creation already asked for is let finish, and those processes
    are ended (SIGTERM).  Best effort and bounded (:data:`_SPAWN_DRAIN_S`): a start-up
    that hangs can still be left."""
    deadline = time.monotonic() + _SPAWN_DRAIN_S
    try:
        parked = threading.Event()

        def park() -> None:  # runs on the cluster's loop thread, which then stays here
            parked.set()
            threading.Event().wait()

        cluster.loop.add_callback(park)
        if not parked.wait(_SPAWN_DRAIN_S):
            log.debug("the starting cluster's loop did not answer; its workers are left")
            return
        started = []
        for nanny in list(getattr(cluster, "_created", ())):
            proc = getattr(getattr(nanny, "process", None), "process", None)  # AsyncProcess
            thread = getattr(proc, "_watch_message_thread", None)
            if thread is None:
                continue
            proc._watch_q.put_nowait({"op": "stop"})  # after any start already queued
            thread.join(max(0.0, deadline - time.monotonic()))
            started.append(getattr(proc, "_process", None))
        for p in started:  # ended now, not at this process's exit (a Python session goes on)
            if p is not None and getattr(p, "_popen", None) is not None and p.is_alive():
                p.terminate()
    except Exception as exc:  # Dask's internals moved: the old behaviour
        log.debug("worker processes being created not waited for: %s", exc)
    finally:  # "exit status was already read": noise of a start called off
        logging.getLogger("distributed.process").setLevel(logging.ERROR)


def _close_quietly(handle: ClusterHandle) -> None:
    try:
        if handle.client is None:
            handle.cluster.close()
        else:
            handle.close()
    except Exception as exc:  # already stopping: the signal or the error is what matters
        log.debug("closing the cluster that was starting: %s", exc)


#: signals held back while a local cluster starts
_HELD_SIGNALS = ("SIGINT", "SIGTERM")


@contextlib.contextmanager
def _signals_held():
    """Hold SIGINT and SIGTERM back for the block; yields the list of those received.

    When the block ends (also by an error), the previous handlers come back and a held
    signal is raised again (``signal.raise_signal``), after the block's clean-up, so
    that it takes its ordinary way: Ctrl-C's ``KeyboardInterrupt``, the command line's
    ``Terminated``, or the default action.  A second signal while one is held goes to
    the previous handler at once.  A signal that was ignored stays ignored; outside the
    main thread (where Python runs no signal handler) nothing is held."""
    held: list[int] = []
    previous: dict = {}

    def handler(signum, frame):
        if not held:
            held.append(signum)
            return
        old = previous.get(signum)
        if callable(old):
            old(signum, frame)
        elif signum == signal.SIGINT:
            raise KeyboardInterrupt
        else:  # the default action (for SIGTERM: the process ends)
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    if threading.current_thread() is threading.main_thread():
        for name in _HELD_SIGNALS:
            num = getattr(signal, name, None)
            try:
                old = signal.getsignal(num) if num is not None else signal.SIG_IGN
                if old != signal.SIG_IGN:
                    previous[num] = signal.signal(num, handler)
            except (ValueError, OSError):  # not handled from Python here
                pass
    try:
        yield held
    finally:
        for num, old in previous.items():
            signal.signal(num, old if old is not None else signal.SIG_DFL)
        if held:
            signal.raise_signal(held[0])


def read_scheduler_file(path) -> str:
    """The scheduler address in a Dask scheduler file (``dask scheduler --scheduler-file
    FILE`` writes it: JSON with an ``"address"``).

    Raises
    ------
    FileNotFoundError
        No such file.
    UsageError
        A folder, a file that is not such JSON, or whose address is none a client can
        connect to (``--scheduler-file FILE: ...``, one line).
    """
    from gpu_sssp.pipeline.fsnames import shown as _shown

    shown = _shown(path)
    named = opt(f"--scheduler-file {shown}")  # (scheduler_file='...' from Python)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{shown}: no such scheduler file")
    if os.path.isdir(path):
        raise UsageError(f"{named}: is a folder, not a scheduler file")
    what = ""
    for attempt in range(2):  # a file being written: once more (Dask's own read retries)
        if attempt:
            time.sleep(0.2)
        try:
            with open(path, "rb") as fh:
                cfg = json.loads(fh.read().decode("utf-8"))
        except UnicodeDecodeError:
            what = "not JSON text"
            continue
        except json.JSONDecodeError as exc:
            what = f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            continue
        address = cfg.get("address") if isinstance(cfg, dict) else None
        if isinstance(address, str) and address.strip():
            address = address.strip()
            problem = _address_problem(address)  # Dask's ValueError traceback came later
            if problem is not None:
                raise UsageError(f"{named}: its address {address!r} is not a scheduler "
                                 f"address ({problem}); `dask scheduler --scheduler-file FILE` writes one")
            return address
        if not isinstance(cfg, dict):
            kind = {list: "array", str: "string", bool: "true/false", type(None): "null"}.get(type(cfg), "number")
            what = f"a JSON {kind}, not an object"
        elif "address" not in cfg:
            what = 'no "address" in it'
        elif isinstance(address, str):
            what = 'its "address" is empty'
        else:
            what = f'its "address" is {json.dumps(address)}, not text'
    raise UsageError(f"{named}: not a Dask scheduler file ({what}; "
                     "`dask scheduler --scheduler-file FILE` writes one)")


def _writable_by_others(path) -> list[str]:
    """One sentence when every user of this machine may write the scheduler file
    ``path`` (mode ``o+w``): whoever rewrites it points the next client at a scheduler
    of theirs, and a client unpickles what its scheduler sends (code run here).  A
    group-writable file (a team's shared folder) is left alone; so is a file in a
    folder others can write to, but only with the sticky bit (``/tmp``) not set
    (there they may replace it)."""
    import stat

    out = []
    try:
        mode = os.stat(path).st_mode
        folder = os.stat(os.path.dirname(os.path.abspath(path))).st_mode
    except OSError:
        return out
    from gpu_sssp.pipeline.fsnames import shown as _shown

    shown = _shown(path)  # (a line break in the name escaped: a note is one line)
    if mode & stat.S_IWOTH:
        out.append(f"{opt(f'--scheduler-file {shown}')} can be written by every user of this machine (mode "
                   f"{stat.S_IMODE(mode):o}): whoever rewrites it points this client at a scheduler of theirs, "
                   "which can run code here; `chmod o-w` it")
    elif folder & stat.S_IWOTH and not folder & stat.S_ISVTX:
        out.append(f"{opt(f'--scheduler-file {shown}')} is in a folder every user of this machine can write to "
                   f"(mode {stat.S_IMODE(folder):o}, no sticky bit): whoever replaces the file points this "
                   "client at a scheduler of theirs, which can run code here")
    return [render(line) for line in out]  # (notes, printed or warned: rendered now)


def listen_addresses(host, dashboard_address, dashboard: bool) -> tuple[str, str | None]:
    """``(host, dashboard_address)`` for a local cluster, checked: their forms, that a
    host name in them resolves on this machine (``socket.getaddrinfo``; an IP address
    needs no lookup, so the default 127.0.0.1 costs nothing), and that this machine can
    listen on the address (a socket bound to it at port 0: :func:`_check_host`; the
    dashboard's port itself is not tried, Dask takes another when it is busy).
    ``sssp.study`` calls this before it loads the graph or makes the study folder,
    :func:`start_cluster` again before it starts the cluster.

    Dask's own defaults put the dashboard on every interface (``:8787``) while the
    printed link says 127.0.0.1; here everything listens on ``host`` (localhost unless
    asked otherwise) and the dashboard too unless its address names another interface.

    Raises
    ------
    UsageError
        A bad form, a host name that does not resolve, or an address that is not this
        machine's (Dask's cluster would fail to start with a traceback): the message
        names the option (``--host``, ``--dashboard-address``) and the host.
    SettingError
        As above for a value from dask config (``sssp.cluster.host``,
        ``sssp.cluster.dashboard-address``): the message names the key and where its
        value came from.
    """
    host_given = host is not None
    if host_given and not str(host).strip():  # it was taken for the default, 127.0.0.1
        raise UsageError(f"{opt('--host ' + repr(str(host)))}: an empty address; give an interface address like "
                         "127.0.0.1 or 0.0.0.0 (or a host name), or leave it out for 127.0.0.1")
    host = str(setting("cluster.host", host, default=None) or "127.0.0.1")
    if "://" in host or not valid_host(host):
        raise UsageError(f"{opt('--host')} takes an interface address like 127.0.0.1 or 0.0.0.0 (or a host name), "
                         f"got {host!r}")
    _check_host(host, "--host" if host_given else "cluster.host", host)
    if not dashboard:
        if dashboard_address is not None:
            raise UsageError(f"{opt('--dashboard-address')} and {opt('--no-dashboard')} contradict each other")
        return host, f"{_bracket(host)}:0"  # the HTTP server Dask always starts: a free port
    dash_from = "--dashboard-address" if dashboard_address is not None else "cluster.dashboard-address"
    dash = setting("cluster.dashboard-address", dashboard_address, default=None)
    if dash is None:
        dash = f"{_bracket(host)}:8787"
    dash = str(dash)
    if ":" not in dash:
        raise UsageError(f"{opt('--dashboard-address')} takes HOST:PORT (or :PORT for every interface), got {dash!r}")
    port = dash.rsplit(":", 1)[1]
    if not port.isdigit():
        raise UsageError(f"{opt(f'--dashboard-address {dash!r}')}: the port must be a number")
    if not valid_address(dash):
        raise UsageError(f"{opt(f'--dashboard-address {dash!r}')}: expected HOST:PORT (an IP address or a host name, "
                         "and a port from 0 to 65535) or :PORT")
    dash_host = dash.rsplit(":", 1)[0].strip()
    if dash_host.strip("[]") != host.strip("[]"):  # host's own name is resolved above
        _check_host(dash_host, dash_from, dash)
    return host, dash


def _check_host(name: str, where: str, value: str) -> None:
    """Refuse a host that a local cluster could not listen on: ``where`` is the option
    (``--host``) or the setting's key (``cluster.host``) that gave ``value``.

    A host name must resolve here (``socket.getaddrinfo``, once; IP addresses, ``[::1]``
    too, are not looked up), and each of its addresses must be one this machine can
    listen on: a socket is bound to it at port 0 and closed (``--host 1.2.3.4`` on a
    machine without that address: Dask's cluster failed with "Cannot assign requested
    address" and a traceback).  The empty host of ``:PORT`` (every interface) passes."""
    h = name.strip()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    if not h:
        return
    try:
        ip = ipaddress.ip_address(h)
    except ValueError:
        ip = None
    if ip is not None:
        family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        addrs = [(family, (h, 0, 0, 0) if family == socket.AF_INET6 else (h, 0))]
    else:
        try:
            infos = socket.getaddrinfo(h, None)
        except (OSError, UnicodeError) as exc:  # socket.gaierror; a label too long for IDNA, ...
            why = ((exc.strerror or str(exc)) if isinstance(exc, socket.gaierror)
                   else str(exc) or type(exc).__name__)
            _refuse_host(where, value, f"host name {h!r} does not resolve on this machine ({why}); give an IP "
                         "address such as 127.0.0.1 or 0.0.0.0, or a name this machine resolves")
        addrs = []
        for fam, *_rest, sockaddr in infos:
            if fam in (socket.AF_INET, socket.AF_INET6):
                a = (fam, (sockaddr[0], 0, *sockaddr[2:]))
                if a not in addrs:
                    addrs.append(a)
    for fam, sockaddr in addrs:
        try:
            with socket.socket(fam, socket.SOCK_STREAM) as sock:
                sock.bind(sockaddr)
        except OSError as exc:
            if ip is None and h == "localhost" and fam == socket.AF_INET6:
                continue  # Dask (tornado) skips localhost's ::1 where IPv6 is off, so may this
            shown = sockaddr[0]
            if exc.errno == errno.EADDRNOTAVAIL:
                why = ("not an address of this machine" if ip is not None
                       else f"it names {shown}, not an address of this machine")
            else:
                why = f"cannot listen on {shown} here ({exc.strerror or exc})"
            _refuse_host(where, value, f"{why}; give 127.0.0.1 (this machine only), 0.0.0.0 (every interface) "
                         "or the address of one of this machine's network interfaces")


def _refuse_host(where: str, value: str, problem: str):
    if where.startswith("--"):
        raise UsageError(f"{opt(f'{where} {value}')}: {problem}")
    raise refuse_setting(where, problem)


def _cpu_worker_count(cpu_workers: int | None) -> int:
    """A local CPU cluster's workers: ``cpu_workers``, else the setting
    ``sssp.cluster.cpu-workers``, else one per core; refused below 1 or above 4 per core
    (named as the option, or as the setting with where it came from)."""
    n = setting("cluster.cpu-workers", cpu_workers, default=None)
    if n is None:  # (0 is not "unset": it is refused below)
        n = os.cpu_count() or 1
    n = int(n)
    if n < 1:
        raise UsageError(f"{opt('--cpu-workers')} must be at least 1, got {n}")
    cores = os.cpu_count() or 1
    if n > 4 * cores:  # a million asked for started processes until killed, silently
        problem = (f"more than 4 workers per core (this machine has {cores}); "
                   "each worker is a single-thread process")
        if cpu_workers is None:  # the setting's: named with where it came from, not as an option
            raise refuse_setting("cluster.cpu-workers", problem)
        raise UsageError(f"{opt(f'--cpu-workers {n}')}: {problem}")
    return n


_EVERY_INTERFACE = {"", "0.0.0.0", "::", "[::]"}


class NetworkExposureWarning(UserWarning):
    """A local cluster started here listens where other machines can reach it (asked
    for with ``host=`` / ``dashboard_address=`` or the ``sssp.cluster.*`` settings): said
    once per exposed part, so that ``study()`` and ``start_cluster()`` from Python say
    it too (the command line prints these as ``note:`` lines instead)."""


def _beyond_loopback(name: str) -> bool:
    """Whether listening on ``name`` (an interface address or a host name; empty: every
    interface) lets other machines connect: every interface, or an address that is not
    a loopback one (``--host 192.0.2.2``, a host name resolving to one)."""
    h = name.strip()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    if h in _EVERY_INTERFACE:
        return True
    try:
        return not ipaddress.ip_address(h.split("%", 1)[0]).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(h, None)
    except (OSError, UnicodeError):  # refused earlier (_check_host): nothing listens there
        return False
    for *_rest, sockaddr in infos:
        try:
            if not ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0]).is_loopback:
                return True
        except ValueError:
            continue
    return False


def _exposed(host: str, dash: str | None, dashboard: bool, *, host_from: str | None = None,
             dash_from: str | None = None) -> list[str]:
    """What of a local cluster other machines can reach, one sentence each: the
    scheduler and workers where ``host`` is every interface (``0.0.0.0``) or an address
    that is not a loopback one, the dashboard likewise for ``dash``'s host.  ``host_from``
    / ``dash_from``: the option or setting that asked for it (default: the option), as
    the sentence names it.  The study prints these when it starts (:class:`NetworkExposureWarning`
    from Python), since the printed links may name 127.0.0.1."""
    out = []
    host_from = host_from or opt(f"--host {host}")
    if _beyond_loopback(host):
        where = "every network interface" if host in _EVERY_INTERFACE else host
        out.append(f"the scheduler and workers listen on {where} ({host_from}): other machines can reach "
                   "them, and anyone who reaches the scheduler can run code on the workers")
    if dashboard and dash is not None:
        dash_host = dash.rsplit(":", 1)[0]
        if _beyond_loopback(dash_host):
            where = "every network interface" if dash_host in _EVERY_INTERFACE else dash_host
            if dash_from is None:  # on the host's interface unless its address names another
                dash_from = host_from if dash_host.strip("[]") == host.strip("[]") else opt(f"--dashboard-address {dash}")
            out.append(f"the dashboard listens on {where} ({dash_from}): other machines can "
                       "reach it and see the study's tasks, workers and logs")
    return [render(line) for line in out]  # (notes, printed or warned: rendered now)


def _warn_exposed(handle: ClusterHandle) -> ClusterHandle:
    for line in handle.info.get("exposed", ()):
        warnings.warn(line, NetworkExposureWarning, stacklevel=3)
    return handle


def _link_host(host: str, dash: str | None, dashboard: bool) -> str | None:
    """The host a local dashboard's link must name where Dask's would not reach it:
    Dask names the scheduler's host, so a dashboard on another interface
    (``--dashboard-address 192.0.2.2:8787`` while the scheduler is on 127.0.0.1) got
    the link http://127.0.0.1:8787/status where nothing listens; an IPv6 host got
    ``http://[:8787/status``.  None: Dask's link is right."""
    if not dashboard or dash is None:
        return None
    dash_host = dash.rsplit(":", 1)[0].strip()
    if dash_host in _EVERY_INTERFACE:
        # an IPv6 host (``::1``, or ``::``: every interface) got Dask's link split at its
        # first colon (http://[fd00:45927/status); ``::1`` reaches it from this machine
        return "::1" if ":" in host else None
    if dash_host.strip("[]") != host.strip("[]") or ":" in dash_host:
        return dash_host.strip("[]")
    return None


def _dask_dashboard(dash: str | None):
    """``dash`` as Dask takes it: Dask splits a dashboard address at every colon, so an
    IPv6 one (``[::1]:8787``) is given as ``(host, port)``."""
    if dash is not None and dash.startswith("["):
        h, port = dash.rsplit(":", 1)
        return (h.strip("[]"), int(port))
    return dash


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@contextlib.contextmanager
def _http_routes(dashboard: bool):
    """Without a dashboard, start the scheduler's HTTP server with no routes (Dask
    always starts one, for health checks, metrics and its JSON API): nothing served."""
    if dashboard:
        yield
        return
    import dask.config

    with dask.config.set({"distributed.scheduler.http.routes": []}):
        yield


#: what a study says where a scheduler serves no dashboard (``ClusterHandle.dashboard``)
NO_DASHBOARD = "the scheduler was started without one, e.g. dask scheduler --no-dashboard"
NO_BOKEH = "the scheduler's Python lacks bokeh, which Dask draws the dashboard with"


def _dashboard_probe():
    """The function a scheduler runs to say whether it serves a dashboard: ``{"path":
    "/status"}`` (``"/PREFIX/status"`` under a prefix) where a page answers there (not
    Dask's "install bokeh" page), else ``{"path": None, "why": "bokeh" | "none"}``; and
    ``"package"``: whether the scheduler finds this package (the study's ``/sssp`` page,
    ``pipeline.dashboard``, needs it).  Made here, as a closure, so that it travels to
    the scheduler by value: a ``dask scheduler`` that cannot import this package runs
    it too.

    Asked of the scheduler's HTTP routes themselves (Tornado's ``find_handler``), not of
    its ``services`` (where the HTTP server is the "dashboard" with or without one)."""

    def probe(dask_scheduler=None) -> dict:
        import importlib.util

        from tornado import httputil, web

        try:
            package = importlib.util.find_spec("gpu_sssp") is not None
        except (ImportError, ValueError):
            package = False
        app = getattr(dask_scheduler, "http_application", None)
        if app is None or not hasattr(app, "find_handler"):
            return {"path": None, "why": "none", "package": package}
        # Dask's Bokeh application keeps its prefix (bokeh's BokehTornado._prefix)
        prefixes = {getattr(a, "_prefix", None) for a in getattr(app, "applications", ())}
        why = "none"
        for prefix in ["", *sorted(p for p in prefixes if isinstance(p, str) and p)]:
            path = prefix + "/status"
            request = httputil.HTTPServerRequest(start_line=httputil.RequestStartLine("GET", path, "HTTP/1.1"),
                                                 headers=httputil.HTTPHeaders({"Host": "localhost"}))
            found = getattr(app.find_handler(request), "handler_class", None)
            if not isinstance(found, type) or issubclass(found, web.ErrorHandler):
                continue
            if found.__name__ == "MissingBokeh":  # Dask's page saying the dashboard needs bokeh
                why = "bokeh"
                continue
            return {"path": path, "package": package}
        return {"path": None, "why": why, "package": package}

    return probe


def scheduler_dashboard(client) -> dict | None:
    """What ``client``'s scheduler says of its dashboard (:func:`_dashboard_probe`);
    None when it cannot be asked."""
    try:
        said = client.run_on_scheduler(_dashboard_probe())
    except Exception as exc:  # (a scheduler that runs no pickled function, ...)
        log.debug("the scheduler was not asked about its dashboard: %s", exc)
        return None
    return said if isinstance(said, dict) else None


def _not_found(link: str, timeout: float = 2.0) -> bool:
    """Whether loading ``link`` answers 404 (anything else, no answer included: False)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(link, timeout=timeout):
            return False
    except urllib.error.HTTPError as exc:
        return exc.code == 404
    except Exception:
        return False


def study_page(link: str, path: str = "/status") -> str:
    """The study's own page (``pipeline.dashboard``: ``/sssp`` at the root of the
    scheduler's HTTP server, under a dashboard prefix or not) beside dashboard ``link``,
    whose page is at ``path`` on the scheduler (what is before it in the link is kept: a
    proxy's path, ``distributed.dashboard.link``)."""
    if link.endswith(path):
        return link[: -len(path)] + "/sssp"
    return link.rsplit("/", 1)[0] + "/sssp"


def _gpu_sssp_version() -> str:
    """The installed gpu-sssp's version, ``"unknown"`` where none is installed (a
    checkout on ``PYTHONPATH``)."""
    try:
        from importlib.metadata import version

        return version("gpu-sssp")
    except Exception:  # noqa: BLE001 - not installed, or unreadable metadata
        return "unknown"


def _other_version(a: str, b: str) -> bool:
    """Whether gpu-sssp versions ``a`` and ``b`` differ (``"unknown"`` on either side, a
    checkout on ``PYTHONPATH``, is not compared).  The check sent by value to a worker
    that joins mid-study (:func:`_late_worker_check`) applies the same rule itself."""
    return "unknown" not in (a, b) and a != b


def _worker_info(backend: str) -> dict:
    import platform

    from gpu_sssp.pipeline.plugins import use_gpu

    info = {"pid": os.getpid(), "host": platform.node(), "device": "cpu",
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "gpu_sssp": _gpu_sssp_version()}
    if use_gpu(backend):
        try:
            from gpu_sssp.kernels import device_name

            info["device"] = device_name()
        except Exception as exc:  # report, do not fail the study description
            info["device"] = f"gpu (unknown: {exc})"
    return info


def _workers(client) -> dict:
    return client.scheduler_info(n_workers=-1)["workers"] if _accepts_n_workers(client) \
        else client.scheduler_info()["workers"]


#: a worker's statuses on the scheduler once it is leaving (no call waits for it)
_LEAVING = ("closing", "closing_gracefully", "closed", "failed")


def _serving(client) -> dict:
    """The scheduler's workers less those leaving (a worker that failed to start stays
    "closing" there: it is not one to wait with)."""
    return {a: w for a, w in _workers(client).items() if str(w.get("status", "running")) not in _LEAVING}


def _workers_or_lost(client, address: str) -> dict:
    """:func:`_workers`, or :class:`SchedulerLostError` where the client lost its
    scheduler while a study waited for workers (Dask's reconnection ended 30 s later
    with an ERROR and a ``KeyError: 'workers'`` traceback)."""
    lost = SchedulerLostError(f"lost the connection to the scheduler {address} while the study waited for "
                              "workers (it stopped or restarted, or the network went); start the scheduler and "
                              "its workers again, then the study")
    if getattr(client, "status", "running") != "running":
        raise lost
    try:
        return _workers(client)
    except Exception:
        if getattr(client, "status", "running") != "running":
            raise lost from None
        raise


def await_first_worker(client, notice=None, on_failed=None) -> float:
    """Block until the scheduler ``client`` is attached to has a worker (a study is laid
    out for its workers' devices: planned with none, a GPU cluster's workers joining
    later would get CPU batch sizes), at most ``sssp.cluster.join-wait`` seconds (default
    0: no limit; Ctrl-C stops the wait).  ``notice(line)`` (default: a log warning) is
    told once, at once, when there is none yet.  Returns the seconds waited.
    ``on_failed(line)``, where given, is told at once of each worker that joins and
    fails to start meanwhile (:func:`drop_failed_workers` removes it): a worker that
    fails as it joins is not one to wait with, and said nothing until another came.

    Raises
    ------
    SchedulerUnreachableError
        No worker joined within the limit.
    SchedulerLostError
        The client lost its scheduler meanwhile.
    """
    if _serving(client):
        return 0.0
    limit = float(setting("cluster.join-wait", None, default=0))
    address = getattr(getattr(client, "scheduler", None), "address", None) or "the scheduler"
    line = (f"no worker has joined {address} yet: waiting for one"
            + (f" (at most {limit:g} s, sssp.cluster.join-wait)" if limit > 0 else " (Ctrl-C stops)")
            + "; start `dask cuda worker --scheduler-file FILE` on each GPU node "
            "(`dask worker ... --nthreads 1` per core on CPU nodes)")
    (notice or log.warning)(line)
    t0 = time.perf_counter()
    removed = threading.Event()  # the late workers' gate removed one that failed to start
    listening = False
    if on_failed is not None:
        try:
            client.subscribe_topic(FAILED_TOPIC, lambda event: removed.set())
            listening = True
        except Exception as exc:  # noqa: BLE001 - the start check names it later
            log.debug("failed workers not listened for: %s", exc)
    try:
        while True:
            workers = _workers_or_lost(client, address)
            if any(str(w.get("status", "running")) not in _LEAVING for w in workers.values()):
                break
            if on_failed is not None and (workers or removed.is_set()):  # one failed to start?
                removed.clear()
                for failed in drop_failed_workers(client):
                    on_failed(failed)
            if limit > 0 and time.perf_counter() - t0 >= limit:
                raise SchedulerUnreachableError(f"no worker joined {address} in {limit:g} s "
                                                "(sssp.cluster.join-wait); start the workers, then the study")
            time.sleep(0.2)
    finally:
        if listening:
            try:
                client.unsubscribe_topic(FAILED_TOPIC)
            except Exception as exc:  # noqa: BLE001
                log.debug("failed workers still listened for: %s", exc)
    return time.perf_counter() - t0


#: the scheduler's event topic of the workers the late workers' gate removed as they
#: failed to start (:func:`await_first_worker` listens while it waits)
FAILED_TOPIC = "sssp-failed-to-start"
#: why a worker that failed to start (Dask's "closing" for good) cannot serve a study
FAILED_TO_START = ("gpu_sssp or a graph plugin kept on the scheduler does not load there; another Python "
                   "environment? see its log")


def _failed_start():
    """``failed(s, addr)``, run on a scheduler ``s``: ``(who, cls)`` for a worker that went
    "closing" because it failed to start (Dask's ``failure-to-start-<exception>`` closing
    reason: it could not unpickle a worker plugin kept on the scheduler), its name and
    address and the exception's class; None otherwise (a worker leaving as asked, or none).
    Built here, as a closure, so that it travels by value inside the start check's sweep
    and the late workers' gate (the scheduler needs no gpu_sssp)."""

    def failed(s, addr):
        import re

        reason = ""
        for _t, msg in reversed(s.get_events(addr) or ()):
            if isinstance(msg, dict) and msg.get("action") == "closing-worker":
                reason = str(msg.get("reason") or "")
                break
        if not reason.startswith("failure-to-start"):
            return None
        m = re.search(r"'([^']+)'", reason)
        cls = m.group(1).rsplit(".", 1)[-1] if m else reason
        ws = s.workers.get(addr)
        name = str(ws.name) if ws is not None and ws.name is not None else ""
        return (f"{name} ({addr})" if name and name != addr else addr), cls

    return failed


def _failed_worker_sweep():
    """The function a scheduler runs to drop its workers that failed to start, and to
    call the others (the start check), built here, as a closure, so that it travels by
    value (the scheduler needs no gpu_sssp).

    ``sweep(function=None, args=None)`` returns ``{"lines": [...], "results": {address:
    {"ok": result} | {"error": text} | {"gone": status}}}``: one line per worker removed;
    with ``function`` (pickled, as ``args``), what each worker that is not leaving
    answered to ``Worker.run``.  A worker that goes "closing" while it is called is not
    waited for (one that failed to start answers nothing, ever): it is ``gone``, and
    removed too where it failed to start.  A connection error of a worker still
    registered and running (an address the scheduler cannot reach) is its ``error``."""
    why = FAILED_TO_START
    leaving = _LEAVING
    gate_name = LATE_GATE
    failed_start = _failed_start()

    async def sweep(function=None, args=None, dask_scheduler=None) -> dict:
        import asyncio
        import time as _time

        s, lines, results = dask_scheduler, [], {}
        # those the late workers' gate removed as they failed to start (told once)
        lines.extend((getattr(s.plugins.get(gate_name), "failed", None) or {}).values())
        if lines:
            s.plugins[gate_name].failed.clear()

        async def drop():
            for addr, ws in list(s.workers.items()):
                if ws.status.name not in leaving:
                    continue
                got = failed_start(s, addr)
                if got is None:
                    continue  # leaving as asked: it goes by itself
                who, cls = got
                await s.remove_worker(addr, stimulus_id=f"sssp-failed-to-start-{_time.time()}", close=False)
                lines.append(f"worker {who} failed to start ({cls}: {why}) and is removed from the scheduler; "
                             "the study goes on without it")

        await drop()
        if function is None:
            return {"lines": lines, "results": results}
        asks = {}
        for addr, ws in list(s.workers.items()):
            if ws.status.name not in leaving:
                asks[addr] = asyncio.ensure_future(s.broadcast(
                    msg={"op": "run", "function": function, "args": args, "wait": True},
                    workers=[addr], on_error="return"))
        try:
            while any(not f.done() for f in asks.values()):
                for addr, f in asks.items():
                    ws = s.workers.get(addr)
                    if not f.done() and (ws is None or ws.status.name in leaving):
                        f.cancel()
                        results[addr] = {"gone": "removed" if ws is None else ws.status.name}
                pending = [f for f in asks.values() if not f.done()]
                if pending:
                    await asyncio.wait(pending, timeout=0.1)
        finally:
            for f in asks.values():
                if not f.done():
                    f.cancel()
        for addr, f in asks.items():
            if addr in results:
                continue
            try:
                resp = f.result().get(addr)
            except BaseException as exc:  # noqa: BLE001
                resp = exc
            ws = s.workers.get(addr)
            # a worker that left: its connection closed under the call (as _check_worker_code
            # skips those of client.run), or any connection error once the scheduler dropped
            # it or it is leaving.  Another connection error of a worker still registered and
            # running ("Timed out trying to connect": an address the scheduler cannot reach)
            # is its error, named as client.run's was: taken for one that left, it was dropped
            # without a word, and where it was the only worker called again without end
            left = ws is None or ws.status.name in leaving
            if (isinstance(resp, (asyncio.CancelledError, ConnectionError, TimeoutError))
                    or type(resp).__name__ == "CommClosedError" or (isinstance(resp, OSError) and left)):
                results[addr] = {"gone": f"{type(resp).__name__}: {resp}"}
            elif isinstance(resp, BaseException):  # the call failed there (it could not be unpickled)
                text = str(resp) if type(resp) is Exception and str(resp) else \
                    (f"{type(resp).__name__}: {resp}" if str(resp) else type(resp).__name__)
                results[addr] = {"error": text}
            elif isinstance(resp, dict) and resp.get("status") == "OK":
                r = resp.get("result")
                if hasattr(r, "header") and hasattr(r, "frames"):  # the scheduler leaves it serialized
                    from distributed.protocol import deserialize

                    r = deserialize(r.header, r.frames)
                elif type(r).__name__ == "Serialize":  # not serialized at all (a worker in this process)
                    r = r.data
                results[addr] = {"ok": r}
            else:
                text = resp.get("exception_text") if isinstance(resp, dict) else None
                results[addr] = {"error": str(text or resp)}
        await drop()  # those that failed to start while they were called
        # the workers the gate keeps paused, refused by a study under way
        refused = {a: str(r.get("reason", "")) for a, r in
                   (getattr(s.plugins.get(gate_name), "refused", None) or {}).items() if a in s.workers}
        return {"lines": lines, "results": results, "refused": refused}

    return sweep


def drop_failed_workers(client) -> list:
    """Remove from ``client``'s scheduler the workers that failed to start (one line each,
    returned), before a study calls every worker.

    A worker that cannot unpickle a worker plugin the scheduler sends it as it joins
    (``gpu_sssp`` does not import there, and an earlier study's graph plugin was kept:
    ``sssp.study.keep-graph``) fails to start, and Dask keeps it "closing" for good: it
    answers no call, and every call to all workers (the start check, a plugin's
    registration) waited for it without end.  The lines include those the late workers'
    gate removed by itself since the last study asked (each told once).  Best effort: a
    scheduler that runs no function is left as it is (``[]``)."""
    try:
        got = client.run_on_scheduler(_failed_worker_sweep())
    except Exception as exc:  # noqa: BLE001
        log.debug("workers that failed to start not looked for: %s", exc)
        return []
    return [str(x) for x in (got or {}).get("lines") or ()]


def _attached_check(client, backend: str, notice=None) -> tuple[dict, dict]:
    """The start check of an attached cluster: ``(workers, per)`` as
    :func:`describe_cluster` wants them (``per``: :func:`_check_worker_code`'s).

    Each worker is called from the scheduler, which does not wait for one that goes
    "closing" meanwhile: a worker that fails to start (it cannot unpickle a worker
    plugin kept on the scheduler) is registered for a moment, then answers no call,
    ever; a study that began as it joined (or waited for a first worker, and it came)
    waited for it without end.  Such workers are removed and named (one line each to
    ``notice``); when none is left that answered, the check waits for workers again.
    Where the scheduler runs no function, Dask's ``client.run`` as before."""
    from distributed.protocol.pickle import dumps

    tell = notice or log.warning
    address = getattr(getattr(client, "scheduler", None), "address", None) or "the scheduler"
    quiet = False
    while True:
        for line in drop_failed_workers(client):
            tell(line)
        await_first_worker(client, (lambda line: None) if quiet else notice, on_failed=tell)
        try:
            got = client.run_on_scheduler(_failed_worker_sweep(), dumps(_worker_info), dumps((backend,)))
        except Exception as exc:  # noqa: BLE001 - Dask's call, which waits for every worker
            log.debug("start check not run from the scheduler: %s", exc)
            workers = _workers_or_lost(client, address)
            return workers, _check_worker_code(client.run(_worker_info, backend, on_error="return"), workers)
        workers = _workers_or_lost(client, address)  # (those that joined during the calls too)
        for line in got.get("lines") or ():
            tell(str(line))
        per = {}
        for addr, r in (got.get("results") or {}).items():
            if "ok" in r:
                per[addr] = r["ok"]
            elif "error" in r:
                per[addr] = Exception(r["error"])
        refused = {a: why for a, why in (got.get("refused") or {}).items() if a in per}
        rest = {a: r for a, r in per.items() if a not in refused}
        if refused and rest:
            # workers a study under way refused (kept paused: another gpu-sssp, ...): named,
            # not the whole study refused for them, as where they joined after its start
            ok = _check_worker_code(rest, workers)
            if ok:
                for addr, why in sorted(refused.items()):
                    n = workers.get(addr, {}).get("name")
                    n = "" if n is None else str(n)  # (a local cluster's first worker is named 0)
                    who = f"{n} ({addr})" if n and n != addr else addr
                    tell(f"worker {who} is kept paused: a study under way on the cluster refused it ({why}); "
                         "no batch goes to it, the study goes on with the other workers")
                return workers, ok
        if per:
            return workers, _check_worker_code(per, workers)
        quiet = True  # every worker left meanwhile: wait for one again (said once)
        time.sleep(0.2)


def describe_cluster(handle: ClusterHandle, notice=None) -> dict:
    """Workers, threads and the device each worker solves on (for the manifest), and
    the dashboard (:meth:`ClusterHandle.dashboard`: ``dashboard``, its link or None,
    ``dashboard_note`` and ``study_page``).  On an attached cluster the workers that
    failed to start are removed (one line each to ``notice``), and one with no worker yet
    is waited for (:func:`await_first_worker`, which tells ``notice``):
    :func:`_attached_check`."""
    client = handle.client
    if handle.mode == "none":  # nothing to solve: no cluster (pipeline.study.run.study)
        return {"mode": "none", "backend": handle.backend, "workers": 0, "threads": 0, "devices": [],
                "worker_list": [], "dashboard": None, "dashboard_note": None, "study_page": None, "exposed": []}
    if handle.mode == "attached":
        workers, per = _attached_check(client, handle.backend, notice)
    else:
        workers = _workers(client)
        per = _check_worker_code(client.run(_worker_info, handle.backend, on_error="return"), workers)
    out = []
    for addr in sorted(per):  # those that answered: not a worker gone since the list was taken
        w = workers.get(addr, {})
        d = dict(per[addr])
        d.update(address=addr, name=str(w.get("name", "")), nthreads=int(w.get("nthreads", 1)))
        out.append(d)
    devices = sorted({w["device"] for w in out})
    dash = handle.dashboard()
    return {"mode": handle.mode, "backend": handle.backend, "workers": len(out),
            "threads": sum(w["nthreads"] for w in out), "devices": devices, "worker_list": out,
            "dashboard": dash["link"], "dashboard_note": dash["note"], "study_page": dash["study_page"],
            "exposed": list(handle.info.get("exposed", []))}


def describe_late_workers(client, backend: str, cluster_info: dict, seen) -> list[dict]:
    """The workers that solved batches of a run (``seen``: the worker names, or addresses,
    its batches name) but are not in the run's start description ``cluster_info``
    (:func:`describe_cluster`): they joined during the run (:func:`hold_late_workers` let
    them in).  One entry each, as :func:`describe_cluster`'s, with ``"joined": "during
    the run"``; one that has left since keeps its name, ``"left": true``.  The manifest's
    ``cluster.worker_list`` named only the workers of the start, while the batch rows
    named the others too."""
    listed = (cluster_info or {}).get("worker_list") or ()
    known = {str(w.get("name", "")) for w in listed} | {str(w.get("address", "")) for w in listed}
    late = sorted({str(s) for s in seen if s} - known)
    if not late:
        return []
    try:
        workers = _workers(client)
    except Exception as exc:  # noqa: BLE001 - the manifest then names them without details
        log.debug("workers not listed: %s", exc)
        workers = {}
    present = {}
    for addr, w in workers.items():
        for key in (str(w.get("name", "")), str(addr)):
            if key in late:
                present.setdefault(key, addr)
    per = {}
    if present:
        try:
            per = client.run(_worker_info, backend, workers=sorted(set(present.values())), on_error="return")
        except Exception as exc:  # noqa: BLE001 - as above
            log.debug("late workers not described: %s", exc)
    out = []
    for name in late:
        addr = present.get(name)
        info = per.get(addr) if addr is not None else None
        entry = dict(info) if isinstance(info, dict) else {}
        entry.update(address=addr, name=name, joined="during the run")
        if addr is None:
            entry["left"] = True
        else:
            entry["nthreads"] = int(workers.get(addr, {}).get("nthreads", 1))
        out.append(entry)
    return out


def _check_worker_code(per: dict, workers: dict) -> dict:
    """``per`` (``client.run(_worker_info, on_error="return")``: a dict or an exception per
    worker) without the workers that left meanwhile (a connection error); raises
    :class:`WorkerEnvironmentError` naming the workers where ``gpu_sssp`` does not import
    (or fails to) or whose gpu-sssp is another version than the client's."""
    from distributed.comm.core import CommClosedError

    ok, broken = {}, []
    mine = _gpu_sssp_version()

    def name(addr):
        n = workers.get(addr, {}).get("name")
        n = "" if n is None else str(n)  # (a local cluster's first worker is named 0, not "")
        return f"{n} ({addr})" if n and n != addr else addr

    for addr, r in sorted(per.items()):
        if isinstance(r, (CommClosedError, ConnectionError, TimeoutError)):
            continue  # gone since the list was taken: not a worker of this study
        if isinstance(r, BaseException):
            # an error while the worker unpickles the call comes back as Exception(repr(error))
            why = str(r) if type(r) is Exception and str(r) else \
                (f"{type(r).__name__}: {r}" if str(r) else type(r).__name__)
            broken.append(f"{name(addr)}: {why.strip().splitlines()[0] if why.strip() else why}")
            continue
        theirs = str(r.get("gpu_sssp", "unknown"))
        if _other_version(mine, theirs):
            broken.append(f"{name(addr)}: gpu-sssp {theirs}, the client {mine}")
            continue
        ok[addr] = r
    if broken:
        shown = "; ".join(broken[:3]) + (f"; and {len(broken) - 3} more" if len(broken) > 3 else "")
        raise WorkerEnvironmentError(
            f"{len(broken)} of {counted(len(per), 'worker')} cannot run this study's code ({shown}); start "
            f"every worker in the client's Python environment (gpu-sssp {mine}, the same PYTHONPATH)")
    return ok


# --- workers that join a study mid-way (attached clusters) ---------------------------

#: the scheduler plugin that holds the workers joining while studies run
LATE_GATE = "sssp-late-workers"
#: its version: a later client's gate replaces an earlier one on a long-lived scheduler
LATE_GATE_VERSION = 6
#: seconds one check on a held worker waits there for its graph plugin before answering
LATE_CHECK_WAIT_S = 5.0
#: seconds a held worker may go without the study's graph plugin (it never reached it:
#: the worker stopped, or cannot unpickle it) before it is refused
LATE_PLUGIN_MISSING_S = 30.0


def _late_worker_check():
    """The check a held worker runs (``Worker.run`` from the scheduler), built here so
    that it is sent by value: it must run on a worker whose gpu_sssp is another one, or
    none.  ``studies``: ``[{"plugin": name, "version": client's gpu-sssp}]``.  Returns
    ``{"ok": version}``, ``{"refuse": reason}`` or ``{"wait": what}`` (asked again)."""

    async def sssp_late_worker_check(studies, wait, dask_worker=None):
        import asyncio
        import logging
        import time as _time

        def refuse(reason, plugin=None):
            from gpu_sssp.kernels.errors import render as _render

            logging.getLogger("distributed.worker").warning(
                "refused by the sssp study running on the cluster: %s", _render(reason))
            # plugin: the study (its graph plugin) that refused it, where one did
            return {"refuse": reason} if plugin is None else {"refuse": reason, "plugin": plugin}

        try:
            import gpu_sssp.pipeline.plugins  # noqa: F401 - what the study's tasks import
        except BaseException as exc:  # noqa: BLE001 - any failure to import is the reason
            return refuse(f"gpu_sssp does not import there ({type(exc).__name__}: {exc})")
        try:
            from importlib.metadata import version

            theirs = version("gpu-sssp")
        except Exception:  # noqa: BLE001 - a checkout on PYTHONPATH
            theirs = "unknown"
        for st in studies:
            if "unknown" not in (st["version"], theirs) and theirs != st["version"]:
                return refuse(f"gpu-sssp {theirs} there, the study's {st['version']}")
        end = _time.monotonic() + float(wait)
        for st in studies:
            # the worker adds the scheduler's plugins once it has registered: a moment later
            while (plugin := dask_worker.plugins.get(st["plugin"])) is None:
                if dask_worker.status.name not in ("init", "running", "paused"):
                    return refuse(f"it is stopping ({dask_worker.status.name}) without the study's graph "
                                  "plugin (see its log)")
                if _time.monotonic() >= end:
                    return {"wait": "plugin", "plugin": st["plugin"]}
                await asyncio.sleep(0.02)
            ready = getattr(plugin, "_ready", None)
            while ready is not None and not ready.is_set():
                if _time.monotonic() >= end:
                    return {"wait": "loading"}
                await asyncio.sleep(0.01)
            error = getattr(plugin, "_error", None)
            if error is not None:
                from gpu_sssp.kernels.errors import raw

                # (raw: the study's client renders it in its caller's words)
                return refuse(f"it cannot load the study's graph ({type(error).__name__}: {raw(error)})",
                              st["plugin"])
        return {"ok": theirs}

    return sssp_late_worker_check


def _late_gate_class():
    """The scheduler plugin :data:`LATE_GATE`, built here so that it is sent by value
    (the scheduler needs no gpu_sssp)."""
    import asyncio

    from distributed.diagnostics.plugin import SchedulerPlugin

    missing_s = LATE_PLUGIN_MISSING_S
    check_wait = LATE_CHECK_WAIT_S
    failed_to_start = FAILED_TO_START
    failed_topic = FAILED_TOPIC
    failed_start = _failed_start()

    class LateWorkerGate(SchedulerPlugin):
        """While studies run (attached), a worker that joins is held: paused on the
        scheduler (no task goes to it) until it has shown that it can serve every running
        study (gpu_sssp imports there, the same gpu-sssp version as the study's client,
        the study's graph plugin loaded); then it gets tasks as any worker.  One that
        cannot is refused: it stays paused while the studies that refused it run (then it
        is checked again for the others), the scheduler logs why and the client of each
        study that refused it is told (an event on its topic).  The worker's own status
        changes to ``running`` are kept back meanwhile (Dask would hand it tasks at
        once); once no study runs, every worker held or refused is put back as it asked.
        The studies of a client that left are ended after ``grace`` seconds away.
        At any time, studies running or not, a worker that goes "closing" as it failed
        to start (it cannot unpickle a worker plugin kept on the scheduler) is removed
        from the scheduler (Dask kept it so for good, and every call to all workers
        waited for it), and the next study's start check names it once
        (:func:`drop_failed_workers`)."""

        version = LATE_GATE_VERSION

        def __init__(self, check: bytes, grace: float):
            self.check = check
            self.grace = float(grace)
            self.studies: dict = {}  # token -> {"plugin", "version", "client", "topic"}
            self.held: dict = {}  # address -> the status the worker asked for meanwhile
            self.refused: dict = {}  # address -> {"want": status, "reason": str}
            self.away: dict = {}
            self.failed: dict = {}  # address -> the line of a worker removed as it failed to start
            self.orig = None

        # the scheduler's handler of the workers' status changes, wrapped
        def install(self, s):
            if self.orig is None:
                self.orig = s.stream_handlers["worker-status-change"]
                s.stream_handlers["worker-status-change"] = self._status_change

        def uninstall(self, s):
            if self.orig is not None and s.stream_handlers.get("worker-status-change") == self._status_change:
                s.stream_handlers["worker-status-change"] = self.orig
            self.orig = None

        def _status_change(self, status=None, worker=None, stimulus_id=None, **kw):
            name = getattr(status, "name", status)
            if worker in self.held or worker in self.refused:
                if worker in self.held:
                    self.held[worker] = name
                else:
                    self.refused[worker]["want"] = name
                if name == "running":
                    return None  # kept back: paused on the scheduler until admitted
            out = self.orig(status=status, worker=worker, stimulus_id=stimulus_id, **kw)
            if name == "closing" and worker not in self.held and worker not in self.refused:
                # (a held one is the check's: _check names it to the studies)
                s = getattr(self.orig, "__self__", None)
                if s is not None and not s._ongoing_background_tasks.closed:
                    s._ongoing_background_tasks.call_soon(self._drop_if_failed, s, worker)
            return out

        async def _drop_if_failed(self, s, addr):
            """A worker that went "closing" because it failed to start (it could not
            unpickle a worker plugin kept on the scheduler: another environment) stays so
            for good, and every call to all workers (a study's start check, a plugin's
            registration, a study's end) waits for it: removed from the scheduler, also
            while no study runs."""
            import logging
            import time as _time

            got = failed_start(s, addr)
            if got is None or addr not in s.workers or addr in self.held:
                return
            who, cls = got
            logging.getLogger("distributed.scheduler").warning(
                "sssp: worker %s failed to start (%s: %s) and is removed from the scheduler", who, cls, failed_to_start)
            await s.remove_worker(addr, stimulus_id=f"sssp-failed-to-start-{_time.time()}", close=False)
            # for the next study's start check to name (drop_failed_workers), once
            self.failed[addr] = (f"worker {who} failed to start ({cls}: {failed_to_start}) and is removed from "
                                 "the scheduler; the study goes on without it")
            while len(self.failed) > 20:
                self.failed.pop(next(iter(self.failed)))
            s.log_event(failed_topic, {"worker": addr})  # a study waiting for workers asks at once

        def running_elsewhere(self, s, study):
            """The folder of another run of ``study``'s study id under way (its client
            connected) into another folder, else None: the two would share task keys."""
            sid = study.get("sid")
            for st in self.studies.values():
                if (sid and st.get("sid") == sid and st.get("out") != study.get("out")
                        and st.get("client") in s.clients):
                    return st.get("out")
            return None

        def begin(self, s, token, study, vetted):
            self.studies[token] = study
            for addr in list(s.workers):
                if addr not in vetted:  # joined since the study's start check
                    self._hold(s, addr)

        def end(self, s, token):
            self.studies.pop(token, None)
            if self.studies:
                self._recheck_refused(s)
                return
            for addr in list(self.held):
                self._put_back(s, addr, self.held.pop(addr))
            for addr in list(self.refused):
                self._put_back(s, addr, self.refused.pop(addr)["want"])

        def _recheck_refused(self, s):
            """A worker refused only by studies that have all ended is checked again for
            those still running (their start check may have taken it: kept paused, it
            served none of them until every study had ended)."""
            for addr, r in list(self.refused.items()):
                by = r.get("by")  # None: refused by an earlier gate, kept as it was
                if by is None or any(t in self.studies for t in by):
                    continue
                del self.refused[addr]
                if addr in s.workers:
                    self.held[addr] = r["want"]
                    if not s._ongoing_background_tasks.closed:
                        s._ongoing_background_tasks.call_soon(self._check, s, addr)

        def add_worker(self, scheduler=None, worker=None):
            if self.studies:
                self._hold(scheduler, worker)

        def remove_worker(self, scheduler=None, worker=None, **kwargs):
            self.held.pop(worker, None)
            self.refused.pop(worker, None)

        def remove_client(self, scheduler=None, client=None):
            if not any(st["client"] == client for st in self.studies.values()):
                return
            self.away[client] = self.away.get(client, 0) + 1
            tasks = scheduler._ongoing_background_tasks
            if not tasks.closed:
                tasks.call_soon(self._after_grace, scheduler, client)

        async def _after_grace(self, s, client):
            try:
                await asyncio.sleep(self.grace)
            finally:
                self.away[client] = self.away.get(client, 1) - 1
                if self.away[client] <= 0:
                    del self.away[client]
            if client in s.clients or client in self.away:
                return  # back (reconnected), or away again since: a later check decides
            for token, st in list(self.studies.items()):
                if st["client"] == client:
                    self.end(s, token)

        def _hold(self, s, addr):
            from time import time

            from distributed.core import Status

            ws = s.workers.get(addr)
            if ws is None or addr in self.held or addr in self.refused:
                return
            if ws.status not in (Status.init, Status.running, Status.paused):
                return  # leaving: no task goes to it anyway
            self.held[addr] = ws.status.name
            s.handle_worker_status_change(Status.paused, ws, f"sssp-hold-{time()}")
            if not s._ongoing_background_tasks.closed:
                s._ongoing_background_tasks.call_soon(self._check, s, addr)

        def _put_back(self, s, addr, want):
            from time import time

            from distributed.core import Status

            ws = s.workers.get(addr)
            if ws is not None and ws.status == Status.paused and want and want != "paused":
                s.handle_worker_status_change(want, ws, f"sssp-admit-{time()}")

        async def _ask(self, s, addr, studies):
            """The check's answer (a dict), an exception (unreachable), or ``"stuck"``:
            the worker went closing meanwhile; one that failed to start (a graph plugin
            it could not unpickle: another environment) stays closing and answers nothing
            (its server waits for its start), so it is not waited for."""
            from distributed.protocol.pickle import dumps

            ask = asyncio.ensure_future(s.broadcast(
                msg={"op": "run", "function": self.check, "args": dumps((studies, check_wait)), "wait": True},
                workers=[addr], on_error="raise"))
            try:
                while not ask.done():
                    ws = s.workers.get(addr)
                    if ws is None or ws.status.name in ("closing", "closed", "failed"):
                        return "stuck"
                    await asyncio.wait([ask], timeout=0.1)
                try:
                    resp = ask.result().get(addr)
                except Exception as exc:  # noqa: BLE001 - unreachable
                    return exc
            finally:
                if not ask.done():
                    ask.cancel()
            if isinstance(resp, dict) and resp.get("status") == "OK":
                r = resp.get("result")
                if hasattr(r, "header") and hasattr(r, "frames"):  # the scheduler leaves it serialized
                    from distributed.protocol import deserialize

                    r = deserialize(r.header, r.frames)
                return r
            # the check itself failed there (it could not even be unpickled)
            text = resp.get("exception_text") if isinstance(resp, dict) else None
            return {"refuse": f"the check failed there ({text or resp!r})"}

        async def _check(self, s, addr):
            import logging
            import time as _time

            log = logging.getLogger("distributed.scheduler")
            missing = None
            failures = 0
            while addr in self.held and self.studies:
                studies = [{"plugin": st["plugin"], "version": st["version"]} for st in self.studies.values()]
                r = await self._ask(s, addr, studies)
                if addr not in self.held or addr not in s.workers:
                    return  # gone, or put back (no study left)
                if r == "stuck":
                    got = failed_start(s, addr)
                    self.held.pop(addr, None)
                    if got is not None:
                        # Dask keeps such a worker "closing" for good (until worker-ttl):
                        # every call to it would hang (the study's end, the next start check)
                        cls = got[1]
                        self._refused(s, addr, None, f"it failed to start ({cls}: gpu_sssp or the study's graph "
                                                    "plugin does not load there; another Python environment? "
                                                    "see its log) and is removed from the scheduler")
                        await s.remove_worker(addr, stimulus_id=f"sssp-refused-{_time.time()}", close=False)
                    return  # otherwise it is leaving: no task goes to it
                if isinstance(r, BaseException):
                    failures += 1
                    if failures < 3:
                        await asyncio.sleep(1.0)
                        continue
                    r = {"refuse": f"the scheduler cannot reach it ({type(r).__name__}: {r})"}
                if isinstance(r, dict) and "wait" in r:
                    if r["wait"] == "plugin":
                        missing = missing or _time.monotonic()
                        if _time.monotonic() - missing < missing_s:
                            continue
                        r = {"refuse": f"the study's graph plugin did not reach it in {missing_s:g} s "
                                       "(see its log)", "plugin": r.get("plugin")}
                    else:
                        missing = None
                        continue
                if isinstance(r, dict) and "ok" in r:
                    self._put_back(s, addr, self.held.pop(addr))
                    log.info("sssp: worker %s, joined while a study ran, admitted", addr)
                    return
                reason = r.get("refuse") if isinstance(r, dict) else repr(r)
                self._refused(s, addr, self.held.pop(addr), str(reason),
                              r.get("plugin") if isinstance(r, dict) else None)
                return

        def _refused(self, s, addr, want, reason, plugin=None):
            import logging

            ws = s.workers.get(addr)
            name = getattr(ws, "name", None)
            name = "" if name is None else str(name)
            # a graph plugin that failed there: the studies of that graph refused it (not
            # every study running); otherwise (gpu_sssp, its version, a failed start) all did
            by = sorted(t for t, st in self.studies.items() if plugin is not None and st["plugin"] == plugin)
            by = by or sorted(self.studies)
            if want is not None:  # kept paused while the studies that refused it run
                self.refused[addr] = {"want": want, "reason": reason, "by": by}
            logging.getLogger("distributed.scheduler").warning(
                "sssp: worker %s (%s), joined while a study ran, refused: %s", name, addr, reason)
            for t in by:  # told to the clients of those studies only
                s.log_event(self.studies[t]["topic"], {"worker": addr, "name": name, "reason": reason})

    return LateWorkerGate


class LateWorkerHold:
    """A study's hold on the workers that join its attached cluster while it runs
    (:func:`hold_late_workers`); :meth:`close` ends it."""

    def __init__(self, client, token: str, topic: str, on_refused=None):
        self.client = client
        self.token = token
        self.topic = topic
        self.on_refused = on_refused
        self.subscribed = False
        self.refused: list = []

    def _event(self, event) -> None:
        _t, msg = event
        if not isinstance(msg, dict) or "worker" not in msg:
            return
        n, a = str(msg.get("name") or ""), str(msg["worker"])
        who = f"{n} ({a})" if n and n != a else a
        line = render(f"worker {who} joined mid-study and is refused: {msg.get('reason')}; no batch goes to it, "
                      "the study goes on with the other workers")
        self.refused.append(line)
        (self.on_refused or log.warning)(line)

    def close(self) -> None:
        client, token = self.client, self.token

        def on_scheduler(dask_scheduler=None):
            gate = dask_scheduler.plugins.get(LATE_GATE)
            if gate is not None:
                gate.end(dask_scheduler, token)

        if self.subscribed:
            try:
                client.unsubscribe_topic(self.topic)
            except Exception as exc:  # noqa: BLE001
                log.debug("refusals not unsubscribed: %s", exc)
            self.subscribed = False
        if token is None:  # never held (the gate could not be installed)
            return
        try:
            client.run_on_scheduler(on_scheduler)
        except Exception as exc:  # noqa: BLE001 - scheduler gone: its gate went with it
            log.debug("late workers' hold not ended: %s", exc)


def refuse_study_running_elsewhere(client, study_id: str, out) -> None:
    """Raise :class:`StudyRunningError` where the attached cluster runs ``study_id`` into
    another folder than ``out`` (asked of the late workers' gate, which records each
    study it holds for; none installed: nothing runs).  Asked before the study folder
    is started, so that a refused run leaves its folder as it found it (the check of
    :func:`hold_late_workers`, which comes after, still refuses a run that started
    meanwhile).  Best effort: an unanswered question refuses nothing."""
    name = LATE_GATE
    study = {"sid": str(study_id), "out": os.fspath(out)}

    def on_scheduler(dask_scheduler=None):
        gate = dask_scheduler.plugins.get(name)
        if gate is None or not hasattr(gate, "running_elsewhere"):
            return None
        return gate.running_elsewhere(dask_scheduler, study)

    try:
        other = client.run_on_scheduler(on_scheduler)
    except Exception as exc:  # noqa: BLE001 - hold_late_workers asks again
        log.debug("study runs on the cluster not asked: %s", exc)
        return
    if other is not None:
        raise StudyRunningError(_running_elsewhere_line(study_id, other))


def _running_elsewhere_line(study_id, folder) -> str:
    return (f"study {study_id} is already running on this cluster into {folder} (the same graph, "
            "sources and settings: its tasks would be this run's); wait for it to end, or use its folder")


def hold_late_workers(client, token: str, *, plugin: str, vetted, on_refused=None,
                      grace: float | None = None, study_id: str | None = None,
                      out: str | None = None) -> LateWorkerHold:
    """Hold the workers that join ``client``'s cluster while this study runs until they
    have shown that they can serve it; refuse those that cannot.

    A worker that joins an attached cluster mid-study is not in the start check
    (:func:`describe_cluster`): one where ``gpu_sssp`` does not import, of another
    gpu-sssp version, or that cannot load the study's graph plugin (``plugin``: its name)
    got batches at once, and Dask kept the tasks of one that failed to unpickle the
    plugin (a worker stuck "closing") for good: the study hung.  Now the scheduler (a
    plugin, :data:`LATE_GATE`, sent by value) pauses each worker that joins, and those of
    the workers present now that are not in ``vetted`` (the start check's addresses),
    asks it (a check sent by value), and lets it take tasks only once it can serve every
    running study; one that cannot stays paused while studies run, and ``on_refused``
    (default: a log warning) is told one line naming it and why.  Returns the hold,
    whose ``close()`` ends it (the scheduler ends it too once this client has stayed away
    ``sssp.study.lost-client-grace`` seconds).

    ``study_id`` and ``out`` (the study's folder): a run of the same study id under way
    into another folder (from a connected client) is found here, at once on the
    scheduler, and refused.

    Raises
    ------
    StudyRunningError
        The same study runs on the cluster into another folder (its tasks would be this
        run's: Dask shares a task between the clients that submit its key).
    """
    import uuid

    from distributed.protocol.pickle import dumps

    check = dumps(_late_worker_check())
    gate_cls = _late_gate_class()
    grace = float(setting("study.lost-client-grace", grace, default=40.0))
    topic = f"sssp-refused-{token}-{uuid.uuid4().hex[:6]}"
    study = {"plugin": str(plugin), "version": _gpu_sssp_version(), "client": str(client.id), "topic": topic,
             "sid": None if study_id is None else str(study_id), "out": None if out is None else os.fspath(out)}
    vetted = sorted(str(a) for a in vetted)
    name, gate_version = LATE_GATE, LATE_GATE_VERSION
    hold = LateWorkerHold(client, token, topic, on_refused)
    try:
        client.subscribe_topic(topic, hold._event)
        hold.subscribed = True
    except Exception as exc:  # noqa: BLE001 - the refusals are still logged by the scheduler
        log.debug("refusals not subscribed: %s", exc)

    def on_scheduler(dask_scheduler=None):
        s = dask_scheduler
        gate = s.plugins.get(name)
        if getattr(gate, "version", 0) < gate_version:
            new = gate_cls(check, grace)
            if gate is not None:  # an earlier version's: its state goes on in this one
                if hasattr(gate, "uninstall"):
                    gate.uninstall(s)
                for attr in ("studies", "held", "refused", "away", "failed"):
                    getattr(new, attr).update(getattr(gate, attr, {}) or {})
                s.plugins.pop(name, None)
            s.add_plugin(new, name=name)
            gate = new
        gate.install(s)
        other = gate.running_elsewhere(s, study) if hasattr(gate, "running_elsewhere") else None
        if other is not None:
            return {"running": other}
        gate.begin(s, token, study, set(vetted))
        return None

    try:
        said = client.run_on_scheduler(on_scheduler)
    except Exception as exc:  # noqa: BLE001 - the study runs as before (the graph plugin still
        # refuses another gpu-sssp version: its tasks raise instead of solving)
        log.warning("workers joining during the study are not checked (%s: %s)", type(exc).__name__, exc)
        hold.token = None
        return hold
    if isinstance(said, dict) and "running" in said:
        hold.token = None  # nothing begun: close() only unsubscribes
        hold.close()
        raise StudyRunningError(_running_elsewhere_line(study_id, said["running"]))
    return hold


def serving_workers(client) -> list:
    """The addresses of the cluster's workers, less those the late workers' gate
    (:func:`hold_late_workers`) refused: a cluster left with refused workers only has no
    worker for the study."""
    name = LATE_GATE

    def on_scheduler(dask_scheduler=None):
        refused = getattr(dask_scheduler.plugins.get(name), "refused", None) or {}
        return [a for a in dask_scheduler.workers if a not in refused]

    return client.run_on_scheduler(on_scheduler)


def worker_devices(info: dict) -> list:
    """Each worker's device, one entry per worker, from :func:`describe_cluster`'s
    ``info`` (its ``devices`` names each kind once): what a study's default batch size is
    decided from (``pipeline.study.plan.default_batch_size``)."""
    workers = info.get("worker_list")
    if workers:
        return [str(w.get("device", "cpu")) for w in workers]
    return list(info.get("devices") or [])


def _accepts_n_workers(client) -> bool:
    import inspect

    try:
        return "n_workers" in inspect.signature(client.scheduler_info).parameters
    except (TypeError, ValueError):
        return False


@contextlib.contextmanager
def performance_report(filename, client):
    """Dask's performance report (an HTML file) of what ``client``'s cluster runs in a
    ``with`` block.

    ``distributed.performance_report`` finds its client with ``get_client()``: it is
    entered with ``client`` as the current one, so it works whether or not ``client`` is
    the process's default (and it must be entered once a client exists: entered before,
    it raised "No global client found").  The report is written when the block ends,
    also after an error or an interruption (what ran until then); a report that cannot
    be written then is logged, so that the block's own error is the one raised.  One that
    cannot be written after the block ran well raises :class:`ReportNotWrittenError`.
    """
    from distributed import performance_report as _report

    report = _report(filename=str(filename))
    with client.as_current():
        report.__enter__()
        try:
            yield
        except BaseException as exc:
            try:
                report.__exit__(type(exc), exc, exc.__traceback__)
            except Exception as rexc:
                log.warning("performance report %s not written: %s", filename, rexc)
            raise
        try:
            report.__exit__(None, None, None)
        except Exception as exc:
            raise ReportNotWrittenError(f"performance report {filename} not written: {exc}") from exc

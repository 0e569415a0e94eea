"""`sssp` - batched shortest paths on GPUs.

Subcommands: ingest, generate, solve, study, bench, verify.  Each lives in its own
``workflows.cmd_*`` module exposing ``add_parser(subparsers)``.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import signal
import sys

SUBCOMMANDS = ("ingest", "generate", "solve", "study", "bench", "verify")

EXIT_CODES = ("exit status: 0 done; 1 a check failed, a study stopped on a failed batch or on workers that cannot "
              "load its graph, or a bug (with its traceback); "
              "2 bad usage or input; 3 negative cycle; 4 no usable GPU; 130 interrupted (Ctrl-C); "
              "143 terminated (SIGTERM)")


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a batch scheduler's stop), raised in the main
    thread like Ctrl-C's ``KeyboardInterrupt`` so that it takes the same way out: a study
    records ``interrupted`` (with this message as the reason) and shuts its workers and
    cluster down; the command ends with one line and status 128 + the signal (143)."""

    def __init__(self, signum: int = signal.SIGTERM):
        self.signum = int(signum)
        super().__init__(f"terminated by {signal.Signals(self.signum).name}")

    def __reduce__(self):
        return (type(self), (self.signum,))


#: Dask's loggers, quieted for the rest of a command stopped by SIGTERM
_DASK_LOGGERS = ("distributed", "dask_cuda")


def _quiet_dask_after_stop() -> list:
    """Raise Dask's loggers (and every one below them) to CRITICAL; returns their
    ``(logger, level)`` to put back.  A SIGTERM sent to the command's whole process
    group (``timeout``, a batch scheduler's stop) ends a local cluster's workers too,
    and while the study stopped, the in-process scheduler and nannies logged it ("Removing
    worker ... caused the cluster to lose already computed task(s)", "Restarting worker")
    before the command's one line."""
    kept = []
    names = [n for n in list(logging.Logger.manager.loggerDict)
             if any(n == d or n.startswith(d + ".") for d in _DASK_LOGGERS)]
    for name in set(names) | set(_DASK_LOGGERS):
        lg = logging.getLogger(name)
        kept.append((lg, lg.level))
        lg.setLevel(logging.CRITICAL)
    return kept


class _DaskQuietFromTheSignal(logging.Filter):
    """Drops Dask's log records (``distributed.*``, ``dask_cuda.*``) from the moment a
    SIGTERM or SIGINT reaches the process, not from the moment the main thread runs its
    Python handler.  A signal sent to the command's whole process group (``timeout``, a
    batch scheduler's stop, Ctrl-C in a terminal) ends a local cluster's workers too, and
    the in-process scheduler's thread could log "Removing worker ... caused the cluster to
    lose already computed task(s)" before the main thread had taken the signal (a rare
    failure of the whole-group test).  The C-level handler writes the signal's number to
    Python's wakeup file descriptor (``signal.set_wakeup_fd``) at once, in whatever
    thread it lands: the filter looks there before each Dask record passes.  Where
    another wakeup descriptor is in use (``main`` inside an asyncio program), nothing is
    installed and the loggers are quieted by the handler as before."""

    SIGNALS = frozenset(int(s) for s in (signal.SIGTERM, signal.SIGINT))

    def __init__(self):
        super().__init__()
        import socket
        import threading

        self._lock = threading.RLock()  # (a signal handler that logs may run inside seen())
        self._seen = False
        self._r, self._w = socket.socketpair()
        self._r.setblocking(False)
        self._w.setblocking(False)
        self._handlers: list = []

    def install(self) -> bool:
        try:
            old = signal.set_wakeup_fd(self._w.fileno(), warn_on_full_buffer=False)
        except (ValueError, AttributeError, OSError):  # not the main thread
            self.close()
            return False
        if old != -1:  # somebody else's (an event loop's): theirs stays
            signal.set_wakeup_fd(old)
            self.close()
            return False
        handlers = list(logging.getLogger().handlers)
        if logging.lastResort is not None:
            handlers.append(logging.lastResort)
        self._attach(handlers)
        self._attach(logging.getLogger("distributed").handlers)
        return True

    def _attach(self, handlers) -> None:
        for h in handlers:
            if h not in self._handlers:
                h.addFilter(self)
                self._handlers.append(h)

    def attach_to_dask(self) -> None:
        """Import Distributed (which gives its logger its own handler on import) and
        filter that handler too: a command about to start a cluster calls it."""
        importlib.import_module("distributed")
        self._attach(logging.getLogger("distributed").handlers)

    def uninstall(self) -> None:
        for h in self._handlers:
            h.removeFilter(self)
        self._handlers = []
        with contextlib.suppress(ValueError, OSError):
            signal.set_wakeup_fd(-1)
        self.close()

    def close(self) -> None:
        for s in (self._r, self._w):
            with contextlib.suppress(OSError):
                s.close()

    def seen(self) -> bool:
        with self._lock:
            if not self._seen:
                try:
                    data = self._r.recv(4096)
                except (BlockingIOError, OSError):
                    data = b""
                self._seen = any(b in self.SIGNALS for b in data)
            return self._seen

    def filter(self, record: logging.LogRecord) -> bool:
        if not any(record.name == d or record.name.startswith(d + ".") for d in _DASK_LOGGERS):
            return True
        return not self.seen()


def _in_finalizer(frame, depth: int = 64) -> bool:
    """Whether ``frame`` (a signal handler's) runs inside a ``__del__``, where an
    exception raised is dropped by Python."""
    while frame is not None and depth > 0:
        if frame.f_code.co_name == "__del__":
            return True
        frame, depth = frame.f_back, depth - 1
    return False


@contextlib.contextmanager
def _sigterm_raises(quiet_dask: bool = False):
    """While a command runs, SIGTERM raises :class:`Terminated` in the main thread
    (Python's default is to die at once: exit 143, no clean-up, a study's manifest left
    ``running``).  Only the first one raises: a second SIGTERM during the clean-up is
    ignored, so that the clean-up ends (SIGKILL still stops everything).  The previous
    handler comes back afterwards (``main`` can run inside another program).
    ``quiet_dask``: Dask's log records are dropped from the signal on, until the block
    ends (:func:`_quiet_dask_after_stop`), and from the moment a SIGTERM or SIGINT
    reaches the process, in any thread (:class:`_DaskQuietFromTheSignal`)."""
    try:
        previous = signal.getsignal(signal.SIGTERM)
    except (AttributeError, ValueError):  # no SIGTERM here
        yield None
        return
    fired = []
    quieted = []

    def handler(signum, frame):
        if fired:
            return
        if _in_finalizer(frame):
            # raised inside a finalizer (a Dask Future's __del__), the exception would be
            # printed and dropped ('Exception ignored in'): the study ran on to its end,
            # status 0.  The signal comes again a moment later, to be raised outside it
            import os
            import threading

            threading.Timer(0.02, os.kill, (os.getpid(), signum)).start()
            return
        fired.append(signum)
        if quiet_dask and not quieted:  # (once: a signal sent again must not save the lowered levels)
            quieted.extend(_quiet_dask_after_stop())
        raise Terminated(signum)

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: the default stays
        yield None
        return
    early = _DaskQuietFromTheSignal() if quiet_dask else None
    if early is not None and not early.install():
        early = None
    try:
        yield early
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
        if early is not None:
            early.uninstall()
        for lg, lvl in quieted:
            lg.setLevel(lvl)


def _check_settings() -> None:
    """Check every ``sssp.*`` setting (dask config) before the command does anything: a
    bad one (or a dask config file that is not valid YAML) ends it with one line and
    status 2, before any file, study folder or cluster is made
    (``pipeline.config.check_settings``)."""
    from gpu_sssp.pipeline.config import check_settings

    check_settings()


def _version() -> str:
    """The package's own version, ``gpu_sssp.__version__`` (what the installed metadata
    is made from), and where the package runs from a source checkout (a ``pyproject.toml``
    and the ``kernels/`` layer beside the ``gpu_sssp/`` folder: ``PYTHONPATH=<checkout>``
    or an editable install), that checkout's folder.  The installed metadata was read
    before: "unknown" from a checkout without an install, and another copy's version
    where one was installed beside it."""
    import gpu_sssp

    ver = str(gpu_sssp.__version__)
    here = os.path.dirname(os.path.abspath(gpu_sssp.__file__))
    root = os.path.dirname(here)
    if os.path.isfile(os.path.join(root, "pyproject.toml")) and (
            os.path.isfile(os.path.join(root, "kernels", "__init__.py"))
            or os.path.isfile(os.path.join(here, "kernels", "__init__.py"))):
        ver += f" (source checkout {root})"
    return ver


class _PrintVersion(argparse.Action):
    """``--version``: one line, never wrapped (argparse's own action fills the text to the
    terminal's width, which broke a long checkout path over lines, and reads ``%`` in it
    as a format)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(f"{parser.prog} {_version()}\n")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """argparse's parser (every subcommand's too: ``add_parser`` makes one of its
    parent's class) whose usage error says how to give a file whose name starts with a
    minus: ``sssp solve -g.gr -s 1`` ended with "the following arguments are required:
    graph", the file taken for an unknown option.

    The error is one line, as every other (``error: sssp ingest: argument --chunk-mb:
    invalid int value: 'abc' (sssp ingest -h shows the usage)``): argparse printed its
    usage block, often several wrapped lines, before it."""

    #: the command line being parsed (set by :func:`main`)
    argv: tuple = ()

    def error(self, message):
        from gpu_sssp.pipeline.fsnames import shown

        dashed = [a for a in _Parser.argv if isinstance(a, str) and a.startswith("-") and a not in ("-", "--")
                  and a.split("=", 1)[0] not in self._option_string_actions and os.path.lexists(a)]
        if dashed:
            name = shown(dashed[0])
            message = (f"{message} ({name} is a file, read as an option: give it as ./{name}, or after --, "
                       f"e.g. {self.prog if ' ' in self.prog else self.prog + ' COMMAND'} ... -- {name})")
        from gpu_sssp.workflows.common import print_error

        print_error(f"{self.prog}: {message} ({self.prog} -h shows the usage)")
        self.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="sssp",
        description="Batched single-source shortest paths on GPUs (CUDA kernels, Dask, Arrow/Parquet).",
        epilog=EXIT_CODES,
    )
    parser.add_argument("--version", action=_PrintVersion, help="show the version and exit")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        mod = importlib.import_module(f"gpu_sssp.workflows.cmd_{name}")
        mod.add_parser(sub)
    _take_negative_values(parser)
    return parser


def _innermost(parser, args):
    """The (sub)parser of the command that ``args`` were parsed for: ``sssp generate
    grid``'s for ``sssp generate grid ...``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if chosen is not None:
                return _innermost(chosen, args)
    return parser


def _take_negative_values(parser) -> None:
    """``common.take_negative_values`` on ``parser`` and every parser under it: a value
    that starts with a minus (``--weights -5:-1``, ``--max-distance-bytes -1GB``) reaches
    its option's own check, not argparse's "expected one argument"."""
    from gpu_sssp.workflows.common import take_negative_values

    take_negative_values(parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sp in set(action.choices.values()):
                _take_negative_values(sp)


def _interrupted(why: str = "interrupted", status: int = 130) -> int:
    """Ctrl-C (or SIGTERM) before the command runs (while the subcommands are imported):
    the one line and status 130 (143) of a Ctrl-C (SIGTERM) anywhere else, not a
    traceback of the import."""
    try:
        from gpu_sssp.workflows.common import print_error

        print_error(why, label="stopped")
    except BaseException:  # (interrupted again, or rich half-imported): plain text
        sys.stderr.write(f"stopped: {why}\n")
    return status


def _quiet_lost_scheduler(record: logging.LogRecord) -> bool:
    """Drop the Dask client's ERROR tracebacks of a connection refused or closed (a
    scheduler stopped or restarted): what the command says of it is its own one line."""
    exc = record.exc_info[1] if record.exc_info else None
    if exc is None:
        return True
    from distributed.comm.core import CommClosedError

    return not isinstance(exc, (CommClosedError, ConnectionError, OSError))


@contextlib.contextmanager
def _stdout_never_fails_to_encode():
    """While a command runs, a character that standard output's encoding cannot take
    (an ASCII one: ``PYTHONUTF8=0 LC_ALL=C``, ``PYTHONIOENCODING=ascii``) is written as a
    backslash escape, as standard error does by default: a file name beyond ASCII in a
    table or a status line ended the command with ``UnicodeEncodeError`` (and a
    traceback) after its work was done.  Put back afterwards."""
    out = sys.stdout
    errors = getattr(out, "errors", None)
    encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    if errors not in ("strict", "surrogateescape") or encoding in ("utf8", "utf8sig") \
            or not hasattr(out, "reconfigure"):
        yield
        return
    try:
        out.reconfigure(errors="backslashreplace")
    except (ValueError, OSError, AttributeError):
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(ValueError, OSError, AttributeError):
            out.reconfigure(errors=errors)


class _ReaderMayLeave:
    """Standard output (or error) for a command's run, whose reader may go away (``sssp
    study ... | head -2``, ``sssp bench ... 2>&1 | head``): the first write or flush that
    finds the pipe closed points the file descriptor at ``/dev/null`` and the command goes
    on without its report, to its own end and status.  Its product is its files: rich's
    handling (``SystemExit(1)``, no word) ended ``sssp solve ... -o F | head`` before it
    wrote ``F``, and ``sssp bench`` (its notes and progress bar on standard error) with no
    rows saved, with status 1, which this command line keeps for a failed check or a bug."""

    def __init__(self, out):
        self._out = out
        self.gone = False

    def _lost(self) -> None:
        self.gone = True
        with contextlib.suppress(Exception):  # what is still buffered goes to /dev/null
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._out.fileno())
            finally:
                os.close(devnull)
            self._out.flush()

    def write(self, text):
        if not self.gone:
            try:
                return self._out.write(text)
            except BrokenPipeError:
                self._lost()
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        if not self.gone:
            try:
                self._out.flush()
            except BrokenPipeError:
                self._lost()

    def __getattr__(self, name):  # isatty, encoding, fileno, reconfigure, ... of the real one
        return getattr(self._out, name)


@contextlib.contextmanager
def _readers_may_leave():
    """Standard output and standard error as :class:`_ReaderMayLeave` while the
    command runs (their last flush included); put back afterwards."""
    wrapped = {}
    for name in ("stdout", "stderr"):
        real = getattr(sys, name)
        if real is not None:
            wrapped[name] = (real, _ReaderMayLeave(real))
            setattr(sys, name, wrapped[name][1])
    try:
        yield
    finally:
        for name, (real, mine) in wrapped.items():
            mine.flush()
            if getattr(sys, name) is mine:
                setattr(sys, name, real)


def _one_blas_thread_under_ulimit_v() -> None:
    """Under an address-space limit (``ulimit -v``), one OpenBLAS thread unless the user
    chose (``OPENBLAS_NUM_THREADS``): OpenBLAS maps a 64 MB buffer per thread as SciPy
    loads it, and a failing map is retried without end - ``ulimit -v 1500000`` hung at
    100% CPU for good (SIGTERM unheard), 1,700,000 ended with an ImportError traceback
    ("failed to map segment").  Nothing here leans on BLAS.  Only before NumPy is loaded
    (the console script's case), where it still has an effect."""
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return
    if soft != resource.RLIM_INFINITY:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        # and SciPy's OpenBLAS loaded first, while the address space is still free:
        # loaded after numba's LLVM (phast's CPU sweep), its buffer's map failed and was
        # retried without end even with one thread (`solve rome99.gr` under ulimit -v
        # 1600000 hung at 95% CPU, SIGTERM unheard: the handler runs only between Python
        # steps).  A failure here is met again, and said in one line, where it is needed.
        try:
            import importlib

            importlib.import_module("scipy.linalg")
        except (ImportError, OSError, MemoryError):
            pass


def main(argv=None) -> int:
    _one_blas_thread_under_ulimit_v()  # (first: importing gpu_sssp.kernels loads NumPy)
    from gpu_sssp.kernels.errors import speaking

    # the messages name the command line's options (--zero-based), not Python's keywords
    with _stdout_never_fails_to_encode(), _readers_may_leave(), speaking("cli"):
        return _main(argv)


class _OneLineFormatter(logging.Formatter):
    """Our log lines on one line each: a line break in a message (a file name that holds
    one: "could not write CSR cache new<LF>line.parquet...") is written escaped (``\\n``),
    and bytes of a name that are not UTF-8 as U+FFFD; a traceback (``-v`` with an
    exception) keeps its lines, as does a message logged with ``extra={"keep_lines":
    True}`` (a worker's traceback sent as text: ``pipeline.study.run._set_aside``),
    each of its lines escaped otherwise."""

    def formatMessage(self, record):
        from gpu_sssp.kernels.errors import render
        from gpu_sssp.pipeline.fsnames import printable

        text = printable(render(record.message))
        if not text.isprintable():
            lines = text.split("\n") if getattr(record, "keep_lines", False) else [text]
            text = "\n".join("".join(c if c.isprintable() else repr(c)[1:-1] for c in line) for line in lines)
        record.message = text
        return super().formatMessage(record)


def _memory_bound() -> str:
    """`` (BOUND)``: the limit on this process's memory where it is not the machine's
    own (a memory cgroup, ``ulimit -v``), else ``""``."""
    try:
        from gpu_sssp.kernels.memory import memory_headroom

        got = memory_headroom()
    except Exception:  # (never in the way of the error line itself)
        return ""
    if got is None or got[1].startswith("the machine"):
        return ""
    return f" (this process runs under {got[1]})"


def _out_of_memory(exc: MemoryError) -> str:
    """The line for a MemoryError: its own text (NumPy's names the array), and which
    limit the process runs under; a bare ``MemoryError`` said only ``error: MemoryError``."""
    text = str(exc) or "out of memory (MemoryError)"
    return f"{text}{_memory_bound()}; give the command more memory or a smaller task"


def _os_error(exc: OSError) -> str:
    """The line for an OSError; where the process runs under a memory bound and the
    error is one that running short of address space gives (ENOMEM, a shared library
    that could not be mapped: ``solve -m phast@cpu`` under ``ulimit -v 2000000`` said
    only that ``libllvmlite.so`` could not be found), the bound too."""
    import errno

    text = str(exc) or type(exc).__name__
    short = (getattr(exc, "errno", None) == errno.ENOMEM or "shared object" in text
             or "cannot allocate memory" in text.lower())
    bound = _memory_bound() if short else ""
    return f"{text}{bound}; give the command more memory" if bound else text


def _resource_exhausted(exc: BaseException):
    """``(line, exit status)`` for the failures that are the machine's limits but not a
    MemoryError, or ``(None, None)``: a thread that could not be started (pyarrow's
    reader pool, Python's threads: under ``ulimit -v`` each thread's stack and malloc
    arena need address space), and a study batch whose workers died while solving it
    (Dask's ``KilledWorker``: a worker killed by the OOM killer or its nanny's memory
    limit, most often; the study folder resumes)."""
    name, text = type(exc).__name__, str(exc)
    module = type(exc).__module__ or ""
    if name == "KilledWorker" and module.startswith("distributed"):
        task = getattr(exc, "task", None)
        worker = getattr(getattr(exc, "last_worker", None), "address", None)
        tries = getattr(exc, "allowed_failures", None)
        times = f"{tries + 1} times" if isinstance(tries, int) else "too often"
        return (f"a batch ({task}) lost the worker solving it {times}{f', last {worker}' if worker else ''}: a "
                "worker that dies while it solves is most often out of memory (the OOM killer, or its nanny at "
                "distributed.worker.memory.terminate); lower --batch-size or give the workers more memory, then "
                "add --resume to continue (finished batches are kept)"), 1
    thread = ("Failed to launch worker thread" in text or "can't start new thread" in text
              or "Resource temporarily unavailable" in text)
    if thread and (module.startswith("pyarrow") or isinstance(exc, RuntimeError)):
        return (f"could not start a thread ({text}): out of memory or of threads{_memory_bound()}; give the "
                "command more memory (a thread needs address space for its stack)"), 2
    return None, None


def _interrupt_within(exc: BaseException):
    """The ``KeyboardInterrupt`` (Ctrl-C, or :class:`Terminated` for SIGTERM) that
    ``exc`` stands for, else None: a signal handled while a compiled function runs (a
    Numba kernel of CPU ``phast``, its hierarchy's build) raises there, and the call
    returns ``SystemError: CPUDispatcher(...) returned a result with an exception set``,
    the interrupt as its cause - which ended ``sssp solve`` in a traceback, status 1."""
    cur, depth = exc, 0
    while isinstance(cur, SystemError) and depth < 8:  # (a compiled call nested in another)
        cur, depth = cur.__cause__ or cur.__context__, depth + 1
    return cur if depth and isinstance(cur, KeyboardInterrupt) else None


def _main(argv=None) -> int:
    try:
        with _sigterm_raises():  # SIGTERM as Ctrl-C while the subcommands load: one line
            parser = build_parser()  # imports every subcommand (rich, NumPy, ...): not instant
    except Terminated as exc:
        return _interrupted(str(exc), 128 + exc.signum)
    except KeyboardInterrupt:
        return _interrupted()
    _Parser.argv = tuple(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(argv)
    if extra:  # named by the subcommand that was given them (argparse: by ``sssp``)
        _innermost(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    handler = logging.StreamHandler()
    handler.setFormatter(_OneLineFormatter("%(levelname)s %(name)s: %(message)s"))
    # our own loggers only: Dask's loggers keep their own configuration, quieted
    # unless -vv asks for everything
    for name in ("gpu_sssp",):
        lg = logging.getLogger(name)
        lg.setLevel(level)
        lg.addHandler(handler)
    if args.verbose < 2:
        for name in ("distributed", "dask_cuda", "bokeh", "tornado"):
            logging.getLogger(name).setLevel(logging.WARNING)
        # a scheduler lost during a study: the study says so in one line (status 1);
        # the client's reconnection attempts logged a traceback per refused connection
        logging.getLogger("distributed.client").addFilter(_quiet_lost_scheduler)
    from gpu_sssp.kernels.errors import SsspError
    from gpu_sssp.workflows.common import print_error

    # the product's errors are caught here, once; anything else is a bug and keeps
    # its traceback
    try:
        with _sigterm_raises(quiet_dask=args.verbose < 2) as quiet:
            _check_settings()
            if quiet is not None and args.command == "study":  # (after the settings' check: dask's config loads)
                quiet.attach_to_dask()
            return int(args.func(args) or 0)
    except SsspError as exc:
        print_error(exc)
        return exc.exit_code
    except (OSError, MemoryError) as exc:  # the machine's limits, not a bug: one line
        print_error(_out_of_memory(exc) if isinstance(exc, MemoryError) else _os_error(exc))
        return 2
    except ImportError as exc:
        # a library that could not be mapped under ulimit -v (SciPy's libgfortran at
        # 1,400,000 KB): a 38-line traceback, status 1
        bound = _memory_bound() if "failed to map segment" in str(exc) else ""
        if not bound:
            raise
        print_error(f"cannot load a library: {exc}{bound}; give the command more memory (address space)")
        return 2
    except Exception as exc:
        stop = _interrupt_within(exc)
        if isinstance(stop, Terminated):  # SIGTERM or Ctrl-C inside compiled code: as below, no traceback
            return _interrupted(str(stop), 128 + stop.signum)
        if stop is not None:
            return _interrupted()
        # memory running short where it is not a MemoryError (pyarrow's threads under
        # ulimit -v, a study's workers killed for memory) is the machine's limit too: one
        # line; anything else is a bug and keeps its traceback
        line, code = _resource_exhausted(exc)
        if line is None:
            raise
        print_error(line)
        return code
    except Terminated as exc:  # SIGTERM: as Ctrl-C, with the signal's own status
        print_error(str(exc), label="stopped")
        return 128 + exc.signum
    except KeyboardInterrupt:
        print_error("interrupted", label="stopped")
        return 130


def run() -> None:
    """The ``sssp`` command (its console script and ``python -m``): :func:`main`, then
    the process's exit.  Where a contraction abandoned to a Ctrl-C still runs in the
    background, the process ends at once (``os._exit``, its output flushed): the
    interpreter's exit would wait for it (``kernels.hierarchy``: RoutingKit's thread
    ended during finalization aborts the process), and the Ctrl-C is meant to stop now."""
    status = main()
    hierarchy = sys.modules.get("gpu_sssp.kernels.hierarchy")
    if hierarchy is not None and hierarchy.native_calls_abandoned():
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":
    run()

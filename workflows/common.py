"""Helpers shared by the subcommands: loading graphs and sources from CLI arguments,
and printing an error as one line."""
from __future__ import annotations

import argparse
import contextlib
import re
import sys
from pathlib import Path

import numpy as np

from gpu_sssp.kernels.errors import OptionError, UsageError, counted
from gpu_sssp.pipeline.fsnames import is_parquet_name
from gpu_sssp.pipeline.writers import refuse_unwritable_folder  # noqa: F401 (used here and by the commands)

# `sssp ingest --format`'s choices (pipeline.ingest._formats.FORMATS): the commands that
# take a raw input refuse any other name as a usage error, before anything is read
INPUT_FORMATS = ("gr", "ss", "co", "mtx", "metis", "edgelist", "pace")

_BREAKS = re.compile(r"\s*[\r\n]+\s*")


def one_line(text) -> str:
    """``text`` with its line breaks folded into spaces: an error is one line.  A file
    name that is not valid UTF-8 in it shows U+FFFD for its odd bytes (it never makes
    printing fail); a name with a line break is escaped where the message names it
    (``pipeline.fsnames.shown``), not here, where it cannot be told from the text."""
    from gpu_sssp.kernels.errors import render
    from gpu_sssp.pipeline.fsnames import printable

    return _BREAKS.sub(" ", printable(render(str(text)))).strip()


def print_error(message, *, label: str = "error", file=None) -> None:
    """Print ``label: message`` on stderr as exactly one line, whatever the terminal.

    Rich would wrap it at the console's width (80 columns when stderr is not a
    terminal) and read ``[...]`` in file names as markup; neither happens here: the
    message is plain text, folded to one line, and only the label is styled (on a
    terminal).
    """
    from rich.console import Console
    from rich.text import Text

    out = Console(file=file or sys.stderr, soft_wrap=True, highlight=False)
    out.print(Text.assemble((f"{label}:", "bold red"), " ", one_line(message)))


def print_table(console, table) -> None:
    """Print a rich table on ``console`` with no cell cut: on a terminal as rich lays it
    out (a column given ``overflow="fold"`` wraps a long number inside its cell); on a
    pipe or a log at the table's own width, where rich's 80 columns cut numbers to
    '1,851,851,835,18…'."""
    width = None if console.is_terminal else \
        console.measure(table, options=console.options.update_width(1 << 16)).maximum
    if width is None or width <= console.width:
        console.print(table)
        return
    # the console's own settings (markup or not, colours) at a wider width for this table:
    # print() takes no width above the console's
    saved = getattr(console, "_width", None)
    console.width = width
    try:
        console.print(table)
    finally:
        console._width = saved


def decimal_int(text: str) -> int:
    """An argparse type: a whole number in ASCII decimal digits (an optional sign,
    ``1_000`` as Python writes it; ``kernels.graph.is_decimal``).  Python's ``int`` took
    the Arabic-Indic ``-s \u0663`` as vertex 3.  Named ``int`` so that argparse's refusal
    reads as before ("invalid int value: '\u0663'")."""
    from gpu_sssp.kernels.graph import is_decimal

    if not is_decimal(text):
        raise ValueError(text)
    return int(text)


decimal_int.__name__ = "int"


def count_value(text: str) -> int:
    """An argparse type: a whole number >= 0 (``--max-vertices``, ``--max-arcs``,
    ``--max-isolated-vertices``; a negative one was refused naming the setting behind
    the option, ``sssp.ingest.max-vertices``, not the option)."""
    try:
        v = decimal_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number >= 0") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number >= 0")
    return v


def refuse_empty_names(*named) -> None:
    """Refuse, in one line, an option given an empty (or blank) file name: ``named`` are
    ``(option, value)`` pairs, ``None`` for an option not given.  An empty name was taken
    for none (``solve -o ''`` solved and wrote nothing, ``verify --sources-file ''``
    checked a random draw) or for the current folder (``-o .: is a directory``)."""
    for option, name in named:
        if name is not None and not str(name).strip():
            raise UsageError(f"{option} {str(name)!r}: an empty name; give a file name")


def check_output_file(out, *, option: str = "-o", inputs=(), example: str = "graph.parquet",
                      caches_of=None, parquet_name: bool = False) -> None:
    """Refuse, before any input is read, an output file that cannot be written as one:
    an existing directory (the atomic rename would fail late, naming its temporary
    file) or one of ``inputs`` itself (writing would destroy the input; the rule is
    ``pipeline.writers.refuse_input_as_output``, which ``pipeline.ingest.ingest`` applies
    itself); an empty name or one that ends with ``/`` (a folder); and, with
    ``caches_of`` (the graph), the names of that Parquet graph's cache files beside it.
    ``parquet_name``: the command takes only names ending in .parquet (ingest, generate),
    so the hint for ``-`` is not ``./-``, which it would refuse next."""
    from gpu_sssp.pipeline.fsnames import shown
    from gpu_sssp.pipeline.writers import refuse_file_as_folder, refuse_input_as_output, refuse_special_file

    import os

    if str(out) == "-":
        # a file named "-" was written in the current folder where a user meant stdout
        named = (f"a name ending in .parquet (e.g. {example})" if parquet_name
                 else "a file name (./- for a file named '-')")
        raise UsageError(f"{option} -: standard output is not offered (a Parquet file is written to a temporary "
                         f"name and renamed); give {named}")
    refuse_empty_names((option, out))
    if str(out).endswith(("/", os.sep)) and not os.path.isdir(out):
        # Path() drops the trailing slash: "-o results/" wrote a file named "results"
        raise UsageError(f"{option} {shown(out)}: names a folder (it ends with '/'); give a file name "
                         f"(e.g. {shown(Path(out) / example)})")
    out = Path(out)
    # (first: Path.is_dir raised "[Errno 36] File name too long" on a name past the limit)
    refuse_name_too_long(out, option)
    if out.is_dir():
        raise UsageError(f"{option} {shown(out)}: is a directory; give a file name (e.g. {shown(out / example)})")
    refuse_special_file(out, f"{option} {shown(out)}",
                        "the output is written to a temporary file and renamed over its name: give a file name")
    refuse_file_as_folder(out, option)
    refuse_input_as_output(out, inputs, label=option)
    if caches_of is not None and _is_parquet(caches_of):
        # <graph>.csr.npz, <graph>.ch.npz beside a Parquet graph (pipeline.graph,
        # pipeline.hierarchy; a raw input's go under .sssp-cache/): the next load found no
        # valid cache there and rebuilt it over the output, without a word
        path = Path(caches_of)
        if (out.name.startswith(path.name + ".") and out.name.endswith(".npz")
                and os.path.abspath(out.parent) == os.path.abspath(path.parent)):
            raise UsageError(f"{option} {shown(out)}: is where {shown(path.name)}'s cache files go (its CSR, its hierarchy), "
                             "which the next run would write over it; give another output name")
    refuse_cache_folder(out, option)
    refuse_unwritable_folder(out.parent if str(out.parent) else Path("."), f"{option} {shown(out)}")


def refuse_cache_folder(out, option: str = "-o") -> None:
    """Refuse an output file in a cache folder of the product: ``.sssp-cache/`` (the
    ingested copies of raw inputs and their CSR and hierarchy caches) or the user's
    ``$XDG_CACHE_HOME/sssp``.  ``solve G -o .sssp-cache/<G's copy>.parquet`` wrote a distance
    table over the ingested copy; the next run ingested again and the copy's hierarchy was
    lost."""
    import os

    from gpu_sssp.pipeline.fsnames import shown
    from gpu_sssp.pipeline.graph import user_cache_folder

    folder = Path(os.path.abspath(out)).parent
    user = Path(os.path.abspath(user_cache_folder()))
    if ".sssp-cache" in folder.parts or folder == user or user in folder.parents:
        raise UsageError(f"{option} {shown(out)}: is in a cache folder of sssp (ingested graphs, their CSR and "
                         "hierarchy files), which it manages and may replace or remove; give a name outside it")


def refuse_name_too_long(out, option: str = "-o") -> None:
    """Refuse, before any input is read, an output file whose temporary name (the one
    it is written under, ``pipeline.writers.owned_temp_for``: the name, or its start and
    a digest where the name is long, plus ``.PID.XXXXXXXX.tmp``) does not fit its
    folder's name limit or the system's path limit: the command failed after its work,
    naming the temporary file ("[Errno 36] Failed stat()ing path
    '.NAME.17993.acadc34f.tmp'").  A name of up to 255 bytes fits on most file
    systems (the temporary is shortened)."""
    import os

    from gpu_sssp.pipeline.fsnames import shown
    from gpu_sssp.pipeline.writers import owned_temp_for

    out = Path(out)
    if not out.name:  # ".", "/": no name for a temporary (Path.with_name's ValueError); a folder, refused next
        return
    tmp = owned_temp_for(out)
    size = len(os.fsencode(tmp.name))
    for part in out.parent.parts:  # a folder's own name past the limit: the OS said only "[Errno 36]"
        if len(os.fsencode(part)) > 255:
            raise UsageError(f"{option} {shown(out)}: its folder name {shown(part)} is {len(os.fsencode(part)):,} "
                             "bytes, beyond the 255-byte limit of a name: give a shorter one")
    folder = out.parent if str(out.parent) else Path(".")
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        limit = int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        limit = 255
    own = len(os.fsencode(out.name))
    if limit > 0 and own > limit:  # (its temporary is shortened: the name itself is not)
        raise UsageError(f"{option} {shown(out)}: a file name of {own:,} bytes, beyond the folder's {limit}-byte "
                         "limit: give a shorter name")
    if limit > 0 and size > limit:
        raise UsageError(f"{option} {shown(out)}: a file name of {len(os.fsencode(out.name)):,} bytes; it is written "
                         f"under a temporary name of {size:,} bytes, beyond the folder's {limit}-byte limit: give "
                         "a shorter name")
    # the whole path too (PATH_MAX, 4096 bytes on Linux; pyarrow opens it made absolute)
    whole = len(os.fsencode(os.path.abspath(tmp)))
    try:
        path_limit = int(os.pathconf(folder, "PC_PATH_MAX"))
    except (OSError, ValueError, AttributeError):
        path_limit = 4096
    if path_limit > 0 and whole >= path_limit:
        raise UsageError(f"{option} {shown(out)}: it is written under a temporary path of {whole:,} bytes, beyond "
                         f"the system's {path_limit}-byte limit on a path: give a shorter one")


def _is_parquet(path) -> bool:
    """Whether ``path`` is a Parquet file (its magic bytes; any name)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


@contextlib.contextmanager
def no_new_folders_on_failure(out):
    """Around a command that writes the file ``out``: the folders above it that did not
    exist before and were made for it (the Parquet writers make them when they open)
    are removed again, deepest first and only while empty, when the block raises (the
    exception goes on).  A refused command leaves nothing."""
    out = Path(out)
    missing = []
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    try:
        yield
    except BaseException:
        for folder in missing:  # deepest first
            try:
                folder.rmdir()
            except OSError:  # not empty, or gone: leave it
                break
        raise


def add_graph_options(p, *, optional: bool = False) -> None:
    """GRAPH and the ingest options; ``optional`` for commands that can run without one
    (``sssp verify --list``), which then check ``args.graph`` themselves."""
    p.add_argument("graph", nargs="?" if optional else None,
                   help="Parquet edge list (from `sssp ingest`) or any input file "
                   "(.gr, .mtx, .graph, .el/.wel, PACE; compressed), ingested once into a cache")
    p.add_argument("--format", choices=INPUT_FORMATS, help="force the input format when GRAPH is not Parquet")
    p.add_argument("--weights", metavar="SPEC", help="as sssp ingest: file (default), unit, random:LO:HI:SEED "
                   "or random-float:LO:HI:SEED (replacing the file's weights, if any)")
    p.add_argument("--undirected", action="store_true", help="add both arcs for every input edge")
    p.add_argument("--zero-based", action="store_true", help="accept 0-based ids in DIMACS files")


def graph_options(args) -> dict:
    """The ingest options given on the command line (only those set)."""
    opts = {}
    for key in ("format", "weights"):
        if getattr(args, key, None):
            opts[key] = getattr(args, key)
    for key in ("undirected", "zero_based"):
        if getattr(args, key, False):
            opts[key] = True
    return opts


def checked_graph_options(args) -> dict:
    """The ingest options of the command line, refused for an ingested Parquet file."""
    from gpu_sssp.pipeline.fsnames import shown

    opts = graph_options(args)
    path = Path(args.graph)
    if is_parquet_name(path) and opts:
        raise OptionError(f"{shown(path)}: --format/--weights/--undirected/--zero-based apply to raw inputs, "
                        "not to an ingested Parquet file")
    return opts


def load_graph_from_args(args):
    from gpu_sssp.pipeline.graph import load_graph

    return load_graph(Path(args.graph), **checked_graph_options(args))


def repeated_note(repeated: int, distinct: int, done: str = "solved") -> str:
    """The ``note:`` line for sources given more than once (solve, verify, study)."""
    return (f"note: {counted(repeated, 'repeated source')} {done} once "
            f"({distinct:,} distinct)")


def check_sources_file(name, option: str = "--sources-file") -> None:
    """Refuse, before the graph is read, a sources file that is not there: the refusal came
    after the graph was loaded (FLA: ingested first).  A name that reads as an id or as a
    study's ``--sources`` value (``solve G --sources all`` is taken for ``--sources-file
    all``: argparse completes an option's prefix) gets a hint."""
    from gpu_sssp.pipeline.errors import InputError

    if name is None or Path(name).exists():
        return
    text = str(name).strip()
    hint = ""
    if text.isdecimal() or text.lower() in ("all", "random"):
        hint = (f" ({option} takes a file's name, and so does --sources, which stands for it here: give "
                "vertex ids as --source ID, repeatable)")
    raise InputError(name, None, f"no such sources file{hint}")


def sources_from_args(graph, ids=None, sources_file=None) -> np.ndarray:
    """File ids from --source/--sources-file -> internal indices (validated)."""
    chunks = []
    if ids:
        chunks.append(graph.to_index(list(ids), what="source"))
    if sources_file:  # the rule of every sources file (study's, matrix's and targets files' too)
        from gpu_sssp.pipeline.fsnames import shown
        from gpu_sssp.pipeline.sources import read_source_file

        file_ids = read_source_file(sources_file, graph)
        chunks.append(graph.to_index(file_ids, what=f"source in {shown(sources_file)}"))
    if not chunks:
        raise UsageError("no sources: give --source ID (repeatable) or --sources-file F.ss")
    return np.concatenate(chunks)


def check_method_name(method: str, backend: str = "auto") -> None:
    """Refuse what can be told of ``method`` and ``backend`` without the graph, before
    the graph is read: an unknown name or another backend (usage errors, exit 2), and a
    GPU method or ``--backend gpu`` where no CUDA device is visible (exit 4; it came only
    after the input was ingested, and for ``auto`` named a method the user never asked
    for: "method 'hbf' needs a CUDA device")."""
    from gpu_sssp import kernels
    from gpu_sssp.kernels.errors import GPUUnavailableError

    if method != "auto":
        if method not in kernels.available_methods():
            raise UsageError(f"unknown method {method!r}; available: {', '.join(kernels.available_methods())}")
        from gpu_sssp.kernels.registry import backends_of

        on = backends_of(method)
        if backend not in ("auto", *on):
            raise OptionError(f"method {method!r} runs on the {' or '.join(on)} backend, not {backend!r}")
    if kernels.device_count() > 0:
        return
    from gpu_sssp.kernels.registry import resolve_backend

    if resolve_backend(method, backend) == "gpu":
        if method == "auto":
            raise GPUUnavailableError("--backend gpu needs a CUDA device; none is visible here (--backend cpu, or "
                                      "auto, runs the CPU methods)")
        raise GPUUnavailableError(f"method {method!r} needs a CUDA device; none is visible here")


def check_method(graph, method: str, backend: str = "auto") -> None:
    """Refuse, as a usage error, a method the user named that cannot solve ``graph``
    (unknown name, another backend, negative weights it does not take), before any
    work starts."""
    from gpu_sssp import kernels

    check_method_name(method, backend)
    if method == "auto":
        return
    from gpu_sssp.kernels.registry import resolve_backend
    # the registration solve will run (phast: the CPU one where no GPU is visible), so
    # that its refusal names that backend's fallback
    spec = kernels.get(method, resolve_backend(method, backend))
    why = spec.unsuitable(graph)
    if why:
        raise UsageError(why)


#: a token that starts as a negative number does ("-5:-1", "-1e-3", "-.5:2", "-1_000",
#: "-inf", "-nan") is an option's value, not an option: the argparse of Python 3.11 took "-5"
#: and "-0.5" only, so `--weights -5:-1` ended with "argument --weights: expected one
#: argument" (later argparse versions take any dash and digit, r"-\.?\d", as here).  No option of any
#: command starts with a dash and a digit (or "-inf", "-nan"), so no
#: option is lost (``cli.build_parser`` sets it on every parser); only an option named
#: whole (``-x`` or ``-x=...``) still wins: a short option followed by its value in one
#: token is not looked for (``-nan`` was ``-n an`` where a command has ``-n``).
NEGATIVE_VALUE = re.compile(r"^-(\.?\d|inf|nan)", re.IGNORECASE)


def take_negative_values(parser):
    """Let ``parser`` read :data:`NEGATIVE_VALUE` tokens as values (argparse keeps the
    test in ``_negative_number_matcher``, set per parser; a version without it keeps
    its own rule, where ``--weights=-5:-1`` still works).  Such a token is a value even
    where it begins with a short option of ``parser``: argparse looks for options
    before it applies that test, and read ``-m -nan`` in ``generate random`` (which has
    ``-n``) as ``-m`` without a value, then ``-n an``.  Returns ``parser``."""
    if hasattr(parser, "_negative_number_matcher"):
        parser._negative_number_matcher = NEGATIVE_VALUE
    parse_optional = parser._parse_optional
    if getattr(parse_optional, "_takes_negative_values", False):
        return parser

    def _parse_optional(arg_string):
        if (isinstance(arg_string, str) and NEGATIVE_VALUE.match(arg_string)
                and arg_string.split("=", 1)[0] not in parser._option_string_actions):
            return None  # a value (a positional where no option takes it)
        return parse_optional(arg_string)

    _parse_optional._takes_negative_values = True
    parser._parse_optional = _parse_optional
    return parser

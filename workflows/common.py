"""Helpers shared by the subcommands: loading graphs and sources from CLI arguments."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def add_graph_options(p) -> None:
    p.add_argument("graph", help="Parquet edge list (from `sssp ingest`) or any input file "
                   "(.gr, .mtx, .graph, .el/.wel, PACE; compressed), ingested once into a cache")
    p.add_argument("--format", help="force the input format when GRAPH is not Parquet")
    p.add_argument("--weights", help="for unweighted inputs: random:LO:HI:SEED")
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
    opts = graph_options(args)
    path = Path(args.graph)
    if path.suffix == ".parquet" and opts:
        raise TypeError(f"{path}: --format/--weights/--undirected/--zero-based apply to raw inputs, "
                        "not to an ingested Parquet file")
    return opts


def load_graph_from_args(args):
    from gpu_sssp.pipeline.graph import load_graph

    return load_graph(Path(args.graph), **checked_graph_options(args))


def sources_from_args(graph, ids=None, sources_file=None) -> np.ndarray:
    """File ids from --source/--sources-file -> internal indices (validated)."""
    chunks = []
    if ids:
        chunks.append(graph.to_index(np.asarray(ids, dtype=np.int64), what="source"))
    if sources_file:
        from gpu_sssp.pipeline.ingest import read_sources

        file_ids = read_sources(sources_file, vertices=graph.n, id_base=graph.id_base)
        if len(file_ids) == 0:
            raise ValueError(f"{sources_file}: no sources in file")
        chunks.append(graph.to_index(file_ids, what=f"source in {sources_file}"))
    if not chunks:
        raise ValueError("no sources: give --source ID (repeatable) or --sources-file F.ss")
    return np.concatenate(chunks)

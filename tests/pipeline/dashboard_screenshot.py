"""Screenshots of the Dask dashboard during a local CPU study (for docs/); not collected by pytest.

Runs ``study(GRAPH, ...)`` on a local cluster of two CPU workers with the dashboard on a
free port and, once ``--after`` batches are journaled, saves (while the study goes on)
headless Chromium screenshots of Dask's Status page (task stream and progress bars, keys
``<method>-batch-...``) and of the study's own page ``/sssp`` into ``--out``, reduced to a
palette PNG to stay small.

    python tests/pipeline/dashboard_screenshot.py --graph NY.gr.xz --weights random:1:1000:7 \
        --random 600 --algorithm dijkstra --out docs
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def shrink(png: Path, colours: int = 128) -> int:
    try:
        from PIL import Image
    except ImportError:
        return png.stat().st_size
    im = Image.open(png).convert("RGB").quantize(colors=colours)
    im.save(png, optimize=True)
    return png.stat().st_size


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graph", default=str(REPO / "data" / "rome99.gr"))
    ap.add_argument("--out", default=str(REPO / "docs"))
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--after", type=int, default=120, help="journaled batches before the screenshots")
    ap.add_argument("--algorithm", default="auto")
    ap.add_argument("--random", type=int, default=None, help="random sources (default: all)")
    ap.add_argument("--weights", default=None, help="ingest option, e.g. random:1:1000:7")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    from tests.pipeline.test_dashboard import run_and_look

    out = Path(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        src = {"random": args.random, "seed": 1} if args.random else {"sources": "all"}
        ingest = {"weights": args.weights} if args.weights else {}
        seen = run_and_look(args.graph, Path(tmp) / "study", shots=Path(tmp) / "shots", after=args.after,
                            block=False, batch_size=args.batch_size, algorithm=args.algorithm, **src, **ingest)
        out.mkdir(parents=True, exist_ok=True)
        for png in seen["shots"]:
            target = out / f"dashboard-{png.stem}.png"
            target.write_bytes(png.read_bytes())
            print(f"{target}: {shrink(target):,} bytes")
    s = seen["summary"]
    print(f"study {s['study_id']}: {s['sources_solved']:,} sources, wall {s['timings']['wall_s']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

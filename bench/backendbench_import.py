"""Whole-command speed of ``sweep import-backendbench`` against a process that runs upstream
BackendBench's trace loader and parser over the same file, side by side in one run.

The full BackendBench trace has 19,171 rows; this script builds a file of that size by
repeating the real rows of the shared ``sample.trace.txt`` (``backendbench_parse.synthesize``:
real rows, the sample's mix of operators, 12% synthetic ``cnt: 0`` rows), then times each of
these as a whole process (``subprocess``, wall time, best of ``--repeat``, the cases taken in
turn in each round so that a busy machine slows them alike):

- ``sweep import-backendbench``: ``python -m sweep.cli import-backendbench FILE --out DIR``
  (a fresh DIR each time): read, parse and check every row (the synthetic ones too), write 90
  definitions and a workload line per non-synthetic row. With ``--include-synthetic`` as well.
- ``upstream, meta tensors``: a Python process that does what upstream's benchmark does to a
  trace file, with upstream's own code from ``--upstream``: ``import torch``, import
  ``BackendBench.utils`` and ``BackendBench.data_loaders``, read the file with
  ``load_ops_from_source(FILE, format="trace")`` (a regex per line, a sha256 per row), then
  ``deserialize_args`` of every row's args (its string rewrites and ``eval``). Upstream's
  ``T(...)`` makes real random tensors with ``torch.testing.make_tensor`` on CUDA, or the CPU
  when there is none; the real rows of this file alone would fill ~470 GB, and the synthetic
  ones ~1e11 elements each (upstream's own benchmark never deserializes those: its dataset
  filter marks ``is_synthetic`` rows excluded). So ``T(...)`` here is upstream's
  ``_deserialize_tensor`` called with ``device="meta"``: the same ``make_tensor`` calls, with
  shape, dtype and stride, nothing allocated; and every row is deserialized, synthetic ones
  included, as ours parses every row.
- ``upstream, parser only``: the same process with ``T(...)`` returning its arguments as they
  are (no tensor at all): the cost of upstream's loader and ``eval`` alone, the fastest
  upstream can be made to read the file.
- ``python -c "import torch"``, for reference: what upstream's process pays before it reads a
  line, and what ours no longer does.

Upstream's process differs from its real one in ways that make it faster, never slower: its
package ``__init__`` (which imports the directory backend and what that needs) is not run, and
``datasets`` (used only to download the Hugging Face copy) and ``tqdm`` (its progress bar)
are stand-ins when they are not installed. Upstream is not on PyPI: ``--upstream`` names a
checkout of meta-pytorch/BackendBench (a directory holding ``BackendBench/``, or a bare git
repository, whose ``HEAD`` is unpacked to a temporary directory), or, without it, an installed
``BackendBench`` package is used.

It prints a table: best wall seconds, best CPU seconds (user+system of the process: steadier
on a shared machine), rows per second, and how many times faster than each upstream process.
Target: ``sweep import-backendbench`` at least 2x faster than upstream's process.

Usage: ``.venv/bin/python bench/backendbench_import.py --upstream DIR [--repeat 5] [--rows 19171]``
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from backendbench_parse import DEFAULT_FILE, synthesize

REPO = Path(__file__).resolve().parents[1]

# The upstream process. argv: upstream root, trace file, "meta" or "parser-only".
_UPSTREAM = """
import sys, types
root, path, mode = sys.argv[1:4]
pkg = types.ModuleType("BackendBench")
pkg.__path__ = [root + "/BackendBench"]  # its __init__ (the directory backend) is not needed
sys.modules["BackendBench"] = pkg
for name in ("datasets", "tqdm"):  # stand-ins only when not installed (both faster than real)
    try:
        __import__(name)
    except ImportError:
        stub = types.ModuleType(name)
        stub.load_dataset = None
        stub.tqdm = lambda iterable, **kw: iterable
        sys.modules[name] = stub
import warnings
warnings.simplefilter("ignore")  # make_tensor warns once about complex32
import torch
from BackendBench import utils
from BackendBench.data_loaders import load_ops_from_source
make = utils._deserialize_tensor
if mode == "meta":
    utils._deserialize_tensor = lambda size, dtype, stride=None, device="cuda": make(size, dtype, stride, "meta")
else:
    utils._deserialize_tensor = lambda size, dtype, stride=None, device="cuda": (size, dtype, stride)
ops = load_ops_from_source(path, format="trace")
n = 0
for op in ops:
    args, kwargs = utils.deserialize_args(op["args"])
    n += 1
print(f"deserialized {n} rows")
"""


def upstream_root(given: Path | None, tmp: Path) -> Path:
    """A directory holding upstream's ``BackendBench/`` package."""
    if given is None:
        spec = importlib.util.find_spec("BackendBench")
        if spec is None or spec.origin is None:
            sys.exit("upstream BackendBench not found: pass --upstream DIR (a checkout or a bare repository)")
        return Path(spec.origin).parents[1]
    if (given / "BackendBench" / "utils.py").is_file():
        return given
    if (given / "HEAD").is_file() and (given / "objects").is_dir():  # a bare repository
        archive = subprocess.run(
            ["git", f"--git-dir={given}", "archive", "HEAD", "BackendBench"], capture_output=True, check=True
        ).stdout
        tmp.mkdir(parents=True, exist_ok=True)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        return tmp
    sys.exit(f"--upstream {given}: neither a checkout with BackendBench/utils.py nor a bare git repository")


def run(cmd: list[str], env: dict[str, str], expect: str) -> tuple[float, float]:
    """Wall and CPU (user+system) seconds of one process; its output must contain ``expect``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0 or expect not in out.stdout:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, help="upstream checkout or bare repository")
    ap.add_argument("--sample", type=Path, default=DEFAULT_FILE)
    ap.add_argument("--rows", type=int, default=19_171)
    ap.add_argument("--repeat", type=int, default=5)
    ns = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        root = upstream_root(ns.upstream, tmp / "upstream")
        trace = tmp / "full.trace.txt"
        text = synthesize(ns.sample.read_text(), ns.rows)
        trace.write_text(text)
        # The checkout first; what the caller's PYTHONPATH holds after it (a GPU host's
        # packages come from bench/gpu_site.sh's bundle there).
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        }
        py = sys.executable
        ours = [py, "-m", "sweep.cli", "import-backendbench", str(trace), "--out"]
        up = [py, "-c", _UPSTREAM, str(root), str(trace)]
        cases: list[tuple[str, list[str], str]] = [
            ("sweep import-backendbench", ours, f"read {ns.rows} rows"),
            ("sweep import-backendbench --include-synthetic", ours, f"read {ns.rows} rows"),
            ("upstream, meta tensors", [*up, "meta"], f"deserialized {ns.rows} rows"),
            ("upstream, parser only", [*up, "parser-only"], f"deserialized {ns.rows} rows"),
            ('python -c "import torch"', [py, "-c", "import torch; print('ok')"], "ok"),
        ]
        best: dict[str, tuple[float, float]] = {}
        for r in range(ns.repeat):
            for k, (name, cmd, expect) in enumerate(cases):
                full = list(cmd)
                if cmd is ours:
                    out = tmp / f"ds-{r}-{k}"
                    full = [*cmd, str(out)] + (["--include-synthetic"] if "synthetic" in name else [])
                wall, cpu = run(full, env, expect)
                if cmd is ours:
                    shutil.rmtree(out)
                w0, c0 = best.get(name, (float("inf"), float("inf")))
                best[name] = (min(w0, wall), min(c0, cpu))

    up_meta, up_parse = best["upstream, meta tensors"][0], best["upstream, parser only"][0]
    print(
        f"{ns.rows} rows ({len(text.encode()) / 1e6:.2f} MB) "
        f"from {ns.sample.name}; best of {ns.repeat}; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    head = (
        f"{'command':<48} {'wall s':>7} {'cpu s':>7} {'rows/s':>8} {'vs upstream':>12} {'vs parser only':>15}"
    )
    print(head)
    for name, _, _ in cases:
        wall, cpu = best[name]
        rate = f"{ns.rows / wall:8.0f}" if "torch" not in name else f"{'-':>8}"
        print(f"{name:<48} {wall:7.2f} {cpu:7.2f} {rate} {up_meta / wall:11.2f}x {up_parse / wall:14.2f}x")
    ours_wall = best["sweep import-backendbench"][0]
    verdict = "met" if up_meta / ours_wall >= 2 else "NOT met"
    print(f"target (sweep import-backendbench >= 2x faster than upstream's process): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

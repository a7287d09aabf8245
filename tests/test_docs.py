"""The documentation runs: every command and query shown in README.md and docs/ is run here.

Conventions (docs/development.md, "Code blocks in the documentation"):

- ```` ```console ````: lines starting with ``$ `` are ``sweep`` commands, run in order (other
  lines are sample output, not compared); each must exit 0. ``> FILE`` saves stdout.
- ```` ```sql ````: one query, run with ``sweep query`` on the page's store.
- ```` ```python file=NAME ```` / ```` ```yaml file=NAME ````: written to NAME before the
  page's next blocks run; ```` ```diff file=NAME ```` replaces its ``-`` lines by its ``+`` lines.
- ```` ```sh ````: shown, not run; each such block is listed in :data:`NOT_RUN` with the reason.
  A ``sweep`` command in a block of any other tag fails the test.

The README runs first, in a copy of the shipped dataset (its one ``sweep launch`` makes the
store); every docs page then runs in a copy of that folder, so its queries have a store.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from sweep.cli import app

if TYPE_CHECKING:
    from .conftest import SharedSandboxes

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"
#: Generated (checked by test_cli_reference_is_up_to_date), not a page of examples.
GENERATED = {DOCS / "cli.md"}
#: What the copy of the repository holds: the shipped dataset, configs and examples.
SHIPPED = ("definitions", "solutions", "workloads", "configs", "examples")
#: Commands run as a process of their own (an embedded Ray does not belong in the test process).
OWN_PROCESS = {"launch", "profile", "tune", "workers"}

#: Blocks shown but not run, keyed by (page, first line), with the reason.
NOT_RUN: dict[tuple[str, str], str] = {
    (
        "README.md",
        "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e '.[dev]' && .venv/bin/sweep validate . && .venv/bin/sweep launch configs/local.yaml",
    ): "creates a virtual environment and installs; the same launch runs in tests/cluster",
    (
        "README.md",
        "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e '.[dev]' && .venv/bin/pytest -n 2 --dist loadfile",
    ): "the command .ci/run runs (test_ci_runs_the_readme_command checks they are the same)",
    (
        "docs/backendbench.md",
        "sweep launch configs/backendbench.yaml && sweep report --store results/backendbench/sweep.duckdb",
    ): "a second launch (36 tasks); tests/engine/test_backendbench_path.py evaluates this sweep",
    (
        "docs/comparing.md",
        "sweep compare exports/main exports/pr --fail-on-slower 5          # two sweep export folders",
    ): "examples of the side syntax: these exports, runs and versions are not in the shipped data",
    (
        "docs/launching-and-clusters.md",
        "sweep launch configs/local.yaml                       # embedded local Ray on this machine",
    ): "needs a Ray cluster with H100 GPUs",
    (
        "docs/launching-and-clusters.md",
        "sweep launch configs/h100.yaml --address head:6379      # starts the workers, leaves them warm",
    ): "needs a Ray cluster with H100 GPUs",
    ("docs/launching-and-clusters.md", "ray up cluster.yaml"): "needs a cloud account (ray up)",
    ("docs/launching-and-clusters.md", "kubectl apply -f raycluster.yaml"): "needs a Kubernetes cluster",
    (
        "docs/parameter-sweeps.md",
        "sweep launch configs/params-cpu.yaml",
    ): "a second launch; tests/cluster/test_params_launch.py runs this one",
    (
        "docs/profiling.md",
        "sweep profile sweep.yaml                                  # best PASSED solution per definition x workload x hardware",
    ): "needs a CUDA GPU, ncu and compute-sanitizer (bench/gpu_profile.sh runs them)",
    (
        "docs/records-and-datasets.md",
        "sweep new solution softmax_f32 my_softmax.py                 # -> solutions/$USER/softmax/softmax_f32/my_softmax.json",
    ): "the source files named are placeholders; the README runs 'sweep new solution'",
}


@dataclass
class Block:
    """One fenced code block of a page."""

    page: str
    line: int
    lang: str
    attrs: dict[str, str] = field(default_factory=dict)
    text: str = ""

    @property
    def first_line(self) -> str:
        return self.text.strip().splitlines()[0] if self.text.strip() else ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


_FENCE = re.compile(r"^( *)```(\S*)(.*)$")


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path``, in order, their indentation removed."""
    page = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.name
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, rest = len(m.group(1)), m.group(2), m.group(3)
        attrs = dict(a.split("=", 1) for a in rest.split() if "=" in a)
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            body.append(lines[j][indent:])
            j += 1
        assert j < len(lines), f"{page}:{i + 1}: code block never closed"
        out.append(Block(page, i + 1, lang, attrs, "\n".join(body) + "\n"))
        i = j + 1
    return out


def pages() -> list[Path]:
    """README.md first, then every page of docs/ but the generated ones."""
    return [README, *(p for p in sorted(DOCS.glob("*.md")) if p not in GENERATED)]


# ---- running blocks ----


@dataclass
class Outcome:
    where: str
    command: str
    code: int
    output: str


def _run_sweep(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run ``sweep ARGS`` in ``cwd``: exit code, stdout, stdout and stderr together."""
    if args and args[0] in OWN_PROCESS:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        p = subprocess.run(
            [sys.executable, "-m", "sweep.cli", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        return p.returncode, p.stdout, p.stdout + p.stderr
    old = Path.cwd()
    os.chdir(cwd)
    try:
        r = CliRunner().invoke(app, args, catch_exceptions=True)
    finally:
        os.chdir(old)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        return 1, r.stdout, f"{r.output}\n{type(r.exception).__name__}: {r.exception}"
    return r.exit_code, r.stdout, r.output


def run_command(line: str, cwd: Path) -> tuple[int, str]:
    """One ``$ sweep ...`` line: its exit code and output (``> FILE`` writes stdout there)."""
    tokens = shlex.split(line, comments=True)
    target: str | None = None
    if ">" in tokens:
        k = tokens.index(">")
        assert k == len(tokens) - 2, f"only a final '> FILE' is supported: {line}"
        target = tokens[k + 1]
        tokens = tokens[:k]
    assert tokens and tokens[0] == "sweep", f"a console block runs sweep commands only: {line}"
    code, stdout, output = _run_sweep(tokens[1:], cwd)
    if target is not None:
        (cwd / target).write_text(stdout, encoding="utf-8")
    return code, output


def apply_diff(block: Block, path: Path) -> None:
    """Replace the ``-`` lines of a diff block by its ``+`` lines in ``path``."""
    old = [ln[1:] for ln in block.text.splitlines() if ln.startswith("-")]
    new = [ln[1:] for ln in block.text.splitlines() if ln.startswith("+")]
    text = path.read_text(encoding="utf-8")
    before = "\n".join(old)
    assert before in text, f"{block.where}: the lines to replace are not in {path.name}"
    path.write_text(text.replace(before, "\n".join(new)), encoding="utf-8")


def run_page(path: Path, cwd: Path) -> list[Outcome]:
    """Run every runnable block of ``path`` in ``cwd``, in order; one outcome per command."""
    out: list[Outcome] = []
    for b in blocks(path):
        if "file" in b.attrs:
            target = cwd / b.attrs["file"]
            if b.lang == "diff":
                apply_diff(b, target)
            else:
                target.write_text(b.text, encoding="utf-8")
        elif b.lang == "console":
            for ln in b.text.splitlines():
                if ln.startswith("$ "):
                    code, output = run_command(ln[2:], cwd)
                    out.append(Outcome(b.where, ln[2:], code, output))
        elif b.lang == "sql":
            code, _, output = _run_sweep(["query", b.text.strip()], cwd)
            out.append(Outcome(b.where, b.text.strip(), code, output))
    return out


def _failures(outcomes: list[Outcome]) -> str:
    return "\n\n".join(
        f"{o.where}: `{o.command}` exited {o.code}:\n{o.output[-3000:]}" for o in outcomes if o.code != 0
    )


@pytest.fixture(scope="module")
def walked(
    tmp_path_factory: pytest.TempPathFactory, _eval_sandboxes: SharedSandboxes
) -> Iterator[tuple[Path, list[Outcome]]]:
    """A copy of the shipped dataset after the README's walkthrough ran in it. Its ``sweep
    eval`` lines share one sandbox (``shared_eval_sandbox``): what they show is the command,
    and tests/engine/test_cli_eval.py keeps an eval that starts its own."""
    import sweep.launch.local

    root = tmp_path_factory.mktemp("readme")
    for name in SHIPPED:
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("results"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sweep.launch.local, "Sandbox", _eval_sandboxes)
        outcomes = run_page(README, root)
    yield root, outcomes


def test_readme_runs(walked: tuple[Path, list[Outcome]]) -> None:
    root, outcomes = walked
    assert outcomes, "the README ran no command"
    assert not _failures(outcomes), _failures(outcomes)
    # What the walkthrough says happened, happened: one task of the first version failed.
    assert (root / "results" / "sweep.duckdb").is_file()
    assert (root / "fixed.jsonl").read_text().count('"PASSED"') == 2


@pytest.mark.parametrize("page", [p.name for p in pages()[1:]])
def test_docs_page_runs(page: str, walked: tuple[Path, list[Outcome]], tmp_path: Path) -> None:
    root, _ = walked
    work = tmp_path / "repo"
    shutil.copytree(root, work)
    outcomes = run_page(DOCS / page, work)
    assert not _failures(outcomes), _failures(outcomes)


# ---- conventions, links, generated files ----


def test_every_command_block_is_run_or_listed() -> None:
    problems: list[str] = []
    shown: set[tuple[str, str]] = set()
    for path in pages():
        for b in blocks(path):
            if b.lang in ("console", "sql") or "file" in b.attrs:
                continue
            if b.lang == "sh":
                shown.add((b.page, b.first_line))
                if (b.page, b.first_line) not in NOT_RUN:
                    problems.append(f"{b.where}: an sh block not listed in NOT_RUN (say why it cannot run)")
                continue
            for ln in b.text.splitlines():
                if ln.strip().startswith(("sweep ", "$ ")):
                    problems.append(
                        f"{b.where}: a command in a '{b.lang or 'untagged'}' block: tag it console or sh"
                    )
                    break
    problems += [f"NOT_RUN lists a block no page has: {k}" for k in NOT_RUN if k not in shown]
    assert not problems, "\n".join(problems)


def test_block_parser_reads_tags_files_and_indentation(tmp_path: Path) -> None:
    page = tmp_path / "probe.md"
    page.write_text(
        "x\n\n  ```console\n  $ sweep validate .\n  out\n  ```\n\n```python file=a.py\nx = 1\n```\n"
    )
    got = blocks(page)
    assert [(b.lang, b.attrs, b.text, b.line) for b in got] == [
        ("console", {}, "$ sweep validate .\nout\n", 3),
        ("python", {"file": "a.py"}, "x = 1\n", 8),
    ]


def test_a_failing_command_is_reported(tmp_path: Path) -> None:
    code, output = run_command("sweep validate no-such-root", tmp_path)
    assert code == 1 and "error:" in output


def test_cli_reference_is_up_to_date() -> None:
    spec = importlib.util.spec_from_file_location("gen_cli", DOCS / "gen_cli.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    current = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert gen.render() == current, "docs/cli.md is out of date: run python docs/gen_cli.py"
    # Every command of the app has its section.
    for name in ("validate", "eval", "launch", "new solution", "workers stop", "export-backendbench"):
        assert f"## `sweep {name}`" in current


def test_ci_runs_the_readme_command() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    # The whole command, pytest's arguments included, up to .ci/run's own redirection.
    m = re.search(r"^(python3 -m venv .*?\.venv/bin/pytest[^|>\n]*?)\s*(?:2>&1|\||$)", ci, re.MULTILINE)
    assert m, ".ci/run no longer runs the test command"
    readme = [line.strip() for line in README.read_text(encoding="utf-8").splitlines()]
    assert m.group(1) in readme, f"README's test command differs from .ci/run's: {m.group(1)}"


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_links_point_at_files_and_headings() -> None:
    problems: list[str] = []
    for path in [*pages(), *GENERATED, REPO / "bench" / "README.md"]:
        text = re.sub(
            r"^ *```.*?^ *```", "", path.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL
        )
        text = re.sub(r"`[^`\n]*`", "", text)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.exists():
                problems.append(f"{path.relative_to(REPO)}: link to a missing file: {target}")
                continue
            if anchor and dest.suffix == ".md":
                heads = {
                    _slug(h) for h in re.findall(r"^#+ (.*)$", dest.read_text(encoding="utf-8"), re.MULTILINE)
                }
                if anchor not in heads:
                    problems.append(f"{path.relative_to(REPO)}: no heading '#{anchor}' in {dest.name}")
    assert not problems, "\n".join(problems)


def test_every_kept_bench_log_is_named_in_the_docs() -> None:
    docs_text = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))
    logs = sorted(p.name for p in (REPO / "bench" / "results").glob("*.log"))
    assert logs
    unnamed = [name for name in logs if name not in docs_text]
    assert not unnamed, f"bench/results logs no docs page names (quote them or git rm them): {unnamed}"
    named = set(re.findall(r"\b\d{4}-\d\d-\d\d-[\w.-]+?\.log\b", docs_text))
    missing = sorted(n for n in named if not (REPO / "bench" / "results" / n).is_file())
    assert not missing, f"docs name bench logs that are not in bench/results: {missing}"


def test_bench_readme_names_every_script() -> None:
    text = (REPO / "bench" / "README.md").read_text(encoding="utf-8")
    scripts = sorted(p.name for p in (REPO / "bench").iterdir() if p.suffix in (".py", ".sh"))
    missing = [s for s in scripts if f"`{s}`" not in text]
    assert not missing, f"bench/README.md does not say what these measure: {missing}"

"""The HTML report in a real headless browser (Chromium): every picture is laid out with a
real size, every bar at least 1 px tall and long, labels whole and inside the page, the
speedup chart as wide as the page. The browser is ``SWEEP_CHROMIUM``, or
``chromium``/``chromium-browser``/``google-chrome`` on the PATH; where there is none, the test
installs the distribution's package (``apt-get install chromium``, as root, as on a clean CI
machine) and skips, saying why, only where that cannot be done."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sweep.store.render import build_report, render_html

from .report_stores import FAST, LONG_A, LONG_B, TINY, make_report_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless_shell")

# Injected into a copy of the page only (the report itself has no scripts): measures what the
# browser laid out and writes it into the DOM, which --dump-dom prints.
_MEASURE = """<script>
addEventListener('load', () => {
  const box = e => { const r = e.getBoundingClientRect();
    return {x: r.left, y: r.top, w: r.width, h: r.height, r: r.right, text: e.textContent}; };
  const all = s => [...document.querySelectorAll(s)].map(box);
  const out = {
    page: document.documentElement.clientWidth,
    charts: [...document.querySelectorAll('svg.chart')].map(s => ({cls: s.getAttribute('class'), ...box(s)})),
    bars: all('svg.speedup-chart rect.bar'), labels: all('svg.speedup-chart text.label'),
    dots: all('svg circle.dot'),
  };
  const pre = document.createElement('pre'); pre.id = 'measure'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _chromium() -> str | None:
    env = os.environ.get("SWEEP_CHROMIUM")
    if env:
        return env
    return next((p for p in map(shutil.which, _NAMES) if p), None)


def _install() -> str:
    """Install Chromium from the distribution's packages; why not, when it cannot be done."""
    apt = shutil.which("apt-get")
    if apt is None or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "no Chromium binary, and no apt-get as root to install one"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for args in (["update"], ["install", "-y", "--no-install-recommends", "chromium"]):
        try:
            done = subprocess.run(
                [apt, *args], capture_output=True, text=True, timeout=900, check=False, env=env
            )
        except subprocess.TimeoutExpired:
            return f"apt-get {args[0]} took more than 900 s"
        if done.returncode != 0:
            return f"apt-get {args[0]} failed: {(done.stderr or done.stdout).strip()[-300:]}"
    return ""


@pytest.fixture
def binary() -> str:
    """The headless browser, installed if it can be; the test is skipped, saying why, if not."""
    found = _chromium()
    if found is None:
        why = _install()
        found = _chromium()
        if found is None:
            pytest.skip(f"{why or 'chromium installed but not found on the PATH'} (set SWEEP_CHROMIUM)")
    return found


def _run(binary: str, *args: str, width: int = 1400) -> subprocess.CompletedProcess[str]:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--window-size={width},1000",
    ]
    return subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=120, check=False)


def test_report_in_a_headless_browser(tmp_path: Path, binary: str) -> None:
    page = render_html(build_report(make_report_store(tmp_path / "sweep.duckdb")))
    measured = tmp_path / "measured.html"
    measured.write_text(page.replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    res = _run(binary, "--virtual-time-budget=5000", "--dump-dom", measured.as_uri())
    found = re.search(r'<pre id="measure">(.*?)</pre>', res.stdout, re.DOTALL)
    assert found, f"no measurement from the browser: rc {res.returncode}, stderr {res.stderr[-2000:]}"
    m = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))

    kinds = [c["cls"].split()[1] for c in m["charts"]]
    assert kinds == ["speedup-chart", "distribution-chart", "roofline", "roofline", "cross-scatter"]
    assert all(c["w"] > 300 and c["h"] > 150 for c in m["charts"])
    speed = m["charts"][0]
    assert speed["w"] >= 0.9 * (m["page"] - 64)  # the page's width, less its margins
    # Every bar is visible: at least 1 px each way (the CPU's 0.0015x ones included).
    assert len(m["bars"]) == 3 * 2 + 2 + 1
    assert all(b["h"] >= 1 and b["w"] >= 1 for b in m["bars"]), m["bars"]
    # Labels: whole names, inside the chart, left of every bar, not overlapping each other.
    labels = sorted(m["labels"], key=lambda b: b["y"])
    assert sorted(b["text"] for b in labels) == sorted([LONG_A, LONG_B, FAST, TINY, "vec_sol"])
    plot_left = min(b["x"] for b in m["bars"])
    assert all(b["x"] >= speed["x"] - 0.5 and b["r"] <= plot_left + 0.5 for b in labels), labels
    assert all(a["y"] + a["h"] <= b["y"] + 0.5 for a, b in itertools.pairwise(labels))
    assert all(d["w"] >= 4 and d["h"] >= 4 for d in m["dots"])

    # And the untouched page renders to a picture.
    plain, shot = tmp_path / "page.html", tmp_path / "report.png"
    plain.write_text(page, encoding="utf-8")
    _run(binary, f"--screenshot={shot}", plain.as_uri())
    assert shot.exists() and shot.stat().st_size > 20_000


# The page's own width against what it lays out, and each chart's legend: measured at a width.
_OVERFLOW = """<script>
addEventListener('load', () => {
  const doc = document.documentElement;
  const out = {
    client: doc.clientWidth, scroll: doc.scrollWidth, body: document.body.scrollWidth,
    charts: [...document.querySelectorAll('svg.chart')].map(s => {
      const g = s.querySelector('g.legend'); const r = g ? g.getBoundingClientRect() : null;
      const c = s.getBoundingClientRect();
      return {legend: r ? {w: r.width, h: r.height, x: r.left, r: r.right} : null, x: c.left, r: c.right};
    }),
    boxes: [...document.querySelectorAll('table')].map(t => {
      const p = t.parentElement; return {cls: p.className, w: p.getBoundingClientRect().width};
    }),
  };
  const pre = document.createElement('pre'); pre.id = 'measure'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.parametrize("width", [1400, 900])
def test_no_horizontal_overflow_and_a_legend_on_every_chart(tmp_path: Path, binary: str, width: int) -> None:
    rep = build_report(make_report_store(tmp_path / "sweep.duckdb"))
    # A wide table, as the leaderboard of long names and many columns is: it scrolls in its box.
    rep.add_table("wide", [f"column_{i}" for i in range(40)], [tuple(LONG_B for _ in range(40))])
    page = render_html(rep)
    measured = tmp_path / "measured.html"
    measured.write_text(page.replace("</body>", _OVERFLOW + "</body>"), encoding="utf-8")
    res = _run(binary, "--virtual-time-budget=5000", "--dump-dom", measured.as_uri(), width=width)
    found = re.search(r'<pre id="measure">(.*?)</pre>', res.stdout, re.DOTALL)
    assert found, f"no measurement from the browser: rc {res.returncode}, stderr {res.stderr[-2000:]}"
    m = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert m["client"] <= width
    assert m["scroll"] <= m["client"] and m["body"] <= m["client"], m  # no horizontal page overflow
    assert m["boxes"] and all(b["cls"] == "scroll" and b["w"] <= m["client"] for b in m["boxes"])
    assert len(m["charts"]) == 5
    for c in m["charts"]:
        key = c["legend"]
        assert key is not None and key["w"] > 20 and key["h"] > 5, c
        assert c["x"] - 0.5 <= key["x"] and key["r"] <= c["r"] + 0.5, c  # inside its chart

"""The parsers of ncu's raw CSV page and compute-sanitizer's report, on hand-written samples
in their formats (tests/data/profile/README.md) and on garbage (hypothesis)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.store import ProfileParseError, parse_ncu_csv, parse_sanitizer

DATA = Path(__file__).parent.parent / "data" / "profile"


def _text(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_ncu_raw_page() -> None:
    kernels = parse_ncu_csv(_text("ncu_raw.csv"))
    assert [k.launch for k in kernels] == [0, 1, 2]
    first = kernels[0]
    assert first.kernel.startswith("rmsnorm_h1024_kernel(")
    assert first.duration_ms == pytest.approx(0.052736)
    assert first.sm_throughput_pct == pytest.approx(21.48)
    assert first.dram_throughput_pct == pytest.approx(84.12)
    assert first.achieved_occupancy_pct == pytest.approx(88.91)
    assert (first.registers_per_thread, first.shared_mem_per_block) == (30, 1024)
    assert (first.grid_size, first.block_size) == (8192, 128)
    assert first.limiter == "memory"
    gemm = kernels[2]
    assert gemm.limiter == "compute (SM)"
    assert gemm.shared_mem_per_block == 98304


def test_ncu_units_are_scaled() -> None:
    text = _text("ncu_raw.csv").replace('"nsecond"', '"usecond"')
    assert parse_ncu_csv(text)[0].duration_ms == pytest.approx(52.736)


def test_ncu_missing_metrics_are_none() -> None:
    text = '"ID","Kernel Name"\n"",""\n"0","k"\n'
    (k,) = parse_ncu_csv(text)
    assert k.kernel == "k" and k.duration_ms is None and k.limiter is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "no CSV header"),
        ("==PROF== No kernels were profiled.\n", "no CSV header"),
        ('"ID","Kernel Name"\n"0"\n', "another width"),
        ('"ID","Kernel Name"\n', "another width"),
        ('"ID","Kernel Name"\n"a\n', "not CSV"),
    ],
)
def test_ncu_refuses_malformed(text: str, words: str) -> None:
    with pytest.raises(ProfileParseError, match=words):
        parse_ncu_csv(text)


def test_memcheck_out_of_bounds() -> None:
    report = parse_sanitizer(_text("memcheck_oob.txt"), "memcheck")
    assert report.errors == 3
    by_kind = {f.kind: f for f in report.findings}
    oob = by_kind["Invalid __global__ read"]
    assert oob.count == 2
    assert oob.kernel == "oob_copy_kernel(const float *, float *, int)"
    assert oob.first_message == "Invalid __global__ read of size 4 bytes"
    assert any(k.startswith("Program hit cudaErrorLaunchFailure") for k in by_kind)


def test_a_clean_racecheck_run_ends_with_its_own_summary() -> None:
    # as compute-sanitizer printed it on an H100: no ERROR SUMMARY line after racecheck
    report = parse_sanitizer(_text("racecheck_clean_h100.txt"), "racecheck")
    assert (report.errors, report.findings) == (0, [])


def test_clean_report_has_no_findings() -> None:
    report = parse_sanitizer(_text("memcheck_clean.txt"), "memcheck")
    assert (report.errors, report.findings) == (0, [])


@pytest.mark.parametrize(
    ("name", "tool", "kind", "kernel"),
    [
        (
            "racecheck.txt",
            "racecheck",
            "Error: Race reported between Write access",
            "reduce_kernel(float *, int)",
        ),
        (
            "initcheck.txt",
            "initcheck",
            "Uninitialized __global__ memory read",
            "scale_kernel(const float *, float *, int)",
        ),
        (
            "synccheck.txt",
            "synccheck",
            "Barrier error detected. Divergent thread(s) in warp",
            "divergent_kernel(float *)",
        ),
    ],
)
def test_other_tools(name: str, tool: str, kind: str, kernel: str) -> None:
    report = parse_sanitizer(_text(name), tool)
    assert report.errors == 1
    (f,) = report.findings
    assert (f.tool, f.kind, f.kernel, f.count) == (tool, kind, kernel, 1)


def test_summary_without_findings_is_kept() -> None:
    report = parse_sanitizer("========= ERROR SUMMARY: 4 errors\n", "memcheck")
    assert [(f.kind, f.count) for f in report.findings] == [("unparsed", 4)]


@pytest.mark.parametrize(
    "text", ["", "Segmentation fault\n", "========= COMPUTE-SANITIZER\n========= Invalid\n"]
)
def test_sanitizer_refuses_unfinished(text: str) -> None:
    with pytest.raises(ProfileParseError, match="no 'ERROR SUMMARY' line"):
        parse_sanitizer(text, "memcheck")


_LINES = st.lists(
    st.one_of(
        st.text(max_size=60),
        st.sampled_from(
            ["=========", "========= ", "=========     at k+0x1", "========= ERROR SUMMARY: 2 errors"]
        ).flatmap(lambda p: st.text(max_size=20).map(lambda t: p + t)),
        st.lists(
            st.sampled_from(['"', ",", "ID", "Kernel Name", "gpu__time_duration.sum", "1,2", "x"]), max_size=8
        ).map("".join),
    ),
    max_size=12,
).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(_LINES)
def test_parsers_never_crash(text: str) -> None:
    for parse in (parse_ncu_csv, lambda t: parse_sanitizer(t, "memcheck")):
        try:
            parse(text)
        except ProfileParseError as e:
            assert str(e)

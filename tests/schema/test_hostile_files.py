"""The one home of reading and writing files: regular files only, read under a cap without
blocking; outputs written whole through a fresh file, never through a link, never over a
store; names that stay one part of a path."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.schema.files import (
    OutputRefused,
    atomic_output,
    fresh_folder,
    inside_problem,
    name_problem,
    output_problem,
    publish_folder,
    write_atomic,
)
from sweep.schema.limits import FileRefused, open_regular, read_bytes, read_text, regular_file_problem

pytestmark = pytest.mark.hostile


def _store(path: Path) -> Path:
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    return path


# ---- reading ----


def test_devices_fifos_and_folders_are_refused_before_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    for path in (fifo, zero, Path("/dev/zero"), Path("/dev/null")):
        with pytest.raises(FileRefused, match="not a regular file"):
            read_text(path, 100)
        with pytest.raises(FileRefused):
            open_regular(path)
        assert regular_file_problem(path) is not None
    with pytest.raises(FileRefused, match="folder"):
        read_bytes(tmp_path, 100)


def test_a_fifo_swapped_in_after_the_check_cannot_hang_the_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kind is checked again on the open descriptor, and the open does not block."""
    from sweep.schema import limits

    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    monkeypatch.setattr(limits, "regular_file_problem", lambda _p: None)  # the race: the check saw a file
    done: list[BaseException] = []

    def read() -> None:
        try:
            limits.read_text(fifo, 10)
        except BaseException as e:  # noqa: BLE001
            done.append(e)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "the open of a FIFO blocked"
    assert isinstance(done[0], FileRefused)


def test_reads_are_capped(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 101)
    with pytest.raises(FileRefused, match="larger than 100 bytes"):
        read_bytes(big, 100)
    assert read_bytes(big, 101) == b"x" * 101
    with open_regular(big) as f:
        assert f.read() == b"x" * 101


# ---- names and roots ----


@pytest.mark.parametrize(
    "name", ["", ".", "..", "../x", "a/b", "a\\b", "/etc", "C:x", "a\x00b", "a\nb", "x" * 256, "é" * 128]
)
def test_names_that_are_no_single_name_are_refused(name: str) -> None:
    assert name_problem(name) is not None


@pytest.mark.parametrize("name", ["x", "rmsnorm_h1024", "a.b+c-d", "...", "é" * 127, "x" * 255])
def test_plain_names_pass(name: str) -> None:
    assert name_problem(name) is None


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(max_size=40))
def test_a_name_that_passes_stays_one_part_inside_the_root(name: str) -> None:
    root = Path("/r/root")
    if name_problem(name) is None:
        path = root / name
        assert path.parent == root and path.name == name
        assert os.path.normpath(path).startswith("/r/root/")


def test_a_link_on_the_way_out_of_the_root_is_seen(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "solutions").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "solutions" / "me").symlink_to(outside)
    assert inside_problem(root, root / "solutions" / "me" / "x.json") is not None
    assert inside_problem(root, root / "solutions" / "you" / "x.json") is None
    assert inside_problem(root, root / ".." / "x.json") is not None
    with pytest.raises(OutputRefused, match="leads out of"):
        write_atomic(root / "solutions" / "me" / "x.json", "{}", inside=root)
    assert not list(outside.iterdir())


# ---- writing ----


def test_a_link_planted_beside_the_target_is_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    target = tmp_path / "out.json"
    # Every name an old writer used for its temporary file, planted.
    for name in (".out.json.tmp", "out.json.tmp", f".out.json.{os.getpid()}.tmp", "out.tmp"):
        (tmp_path / name).symlink_to(victim)
    write_atomic(target, "new")
    assert victim.read_text() == "keep"
    assert target.read_text() == "new" and not target.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.is_symlink()) == ["out.json", "victim"]


def test_a_link_at_the_target_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    target = tmp_path / "out.json"
    target.symlink_to(victim)
    write_atomic(target, "new")
    assert victim.read_text() == "keep" and target.read_text() == "new" and not target.is_symlink()


def test_without_overwrite_an_existing_file_stays(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    target.write_text("old")
    with pytest.raises(FileExistsError):
        write_atomic(target, "new", overwrite=False)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]
    write_atomic(tmp_path / "y.json", "new", overwrite=False)
    assert (tmp_path / "y.json").read_text() == "new"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_output(target) as f:
        f.write(b"half")
        raise RuntimeError("killed")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_outputs_that_are_no_file_to_write_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    store = _store(tmp_path / "results.duckdb")
    renamed = tmp_path / "copy.bin"
    renamed.write_bytes(store.read_bytes())
    linked = tmp_path / "link.json"
    linked.symlink_to(store)
    hard = tmp_path / "hard"
    os.link(store, hard)
    cases = {
        fifo: "FIFO",
        tmp_path: "folder",
        Path("/dev/null"): "device",
        renamed: "DuckDB store",
        store: "is the store",
        Path(f"{store}.wal"): "is the store",
        linked: "is the store",
        hard: "is the store",
    }
    for path, words in cases.items():
        problem = output_problem(path, protected=[store])
        assert problem is not None and words in problem, (path, problem)
        before = store.read_bytes()
        with pytest.raises(OutputRefused):
            write_atomic(path, "x", protected=[store])
        assert store.read_bytes() == before
    assert output_problem(tmp_path / "new.json", protected=[store]) is None


def test_a_folder_of_outputs_is_published_whole(tmp_path: Path) -> None:
    target = tmp_path / "export"
    tmp = fresh_folder(target)
    (tmp / "a").write_text("1")
    assert not target.exists()
    publish_folder(tmp, target)
    assert (target / "a").read_text() == "1" and not tmp.exists()
    again = fresh_folder(target)
    (again / "b").write_text("2")
    with pytest.raises(OSError):
        publish_folder(again, target)  # not empty: never merged into
    assert not again.exists() and sorted(p.name for p in target.iterdir()) == ["a"]


def test_many_writers_of_one_file_leave_one_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    texts = [str(i) * 10_000 for i in range(8)]

    def write(text: str) -> None:
        for _ in range(20):
            write_atomic(target, text)
            time.sleep(0)

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert target.read_text() in texts
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_the_longest_names_get_temporary_names_that_fit(tmp_path: Path) -> None:
    for name in ("é" * 120 + ".json", "x" * 255):
        write_atomic(tmp_path / name, "x")
        assert (tmp_path / name).read_text() == "x"
        folder = tmp_path / "f" / name
        publish_folder(fresh_folder(folder), folder)
        assert folder.is_dir()

"""A warm worker's lease, its keeper (claims, staleness, idle exit) and the fingerprint parts,
without Ray: a fake clock, real files."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.cluster._fingerprint import WorkerEnv, code_digest, env_changes, launch_key, worker_env
from sweep.cluster._lease import Lease, LeaseLost, Wanted
from sweep.cluster._warm_keeper import Place, WarmKeeper
from sweep.sandbox.supervisor import SandboxSpec


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _wanted(owner: str = "run-a", **kw: object) -> Wanted:
    base = Wanted(owner=owner, pool="CPU {}", key="k1", code="c1", lease_s=60.0, idle_timeout_s=600.0)
    return replace(base, **kw)  # type: ignore[arg-type]


# -- the lease ------------------------------------------------------------------------------


def test_a_held_lease_refuses_others_until_released_or_expired() -> None:
    clock = Clock()
    lease = Lease(clock)
    assert lease.take("a", 60) is None and lease.holder() == "a"
    assert lease.take("b", 60) == "a"  # refused, nothing changed
    assert lease.holder() == "a" and lease.idle_for() is None
    clock.now += 59
    assert lease.take("b", 60) == "a"
    clock.now += 2  # expired: the driver of run a stopped renewing (it died)
    assert lease.holder() is None
    assert lease.idle_for() == pytest.approx(1.0)  # free since it expired
    assert lease.take("b", 60) is None and lease.holder() == "b"
    assert not lease.renew("a", 60), "a lost it to b"
    assert not lease.release("a")
    assert lease.release("b") and lease.holder() is None and lease.idle_for() == 0.0


def test_an_expired_lease_nobody_took_is_still_its_owners() -> None:
    clock = Clock()
    lease = Lease(clock)
    lease.take("a", 10)
    clock.now += 100
    assert lease.holder() is None
    assert lease.renew("a", 10) and lease.holder() == "a"


_OWNERS = st.sampled_from(["a", "b", "c"])
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("take"), _OWNERS),
        st.tuples(st.just("renew"), _OWNERS),
        st.tuples(st.just("release"), _OWNERS),
        st.tuples(st.just("wait"), st.floats(min_value=0, max_value=30)),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(ops=_OPS)
def test_lease_properties(ops: list[tuple[str, object]]) -> None:
    """Whatever happens: a take succeeds exactly when the lease is free or already the
    taker's; renew and release succeed only for the last holder; held and idle exclude
    each other."""
    clock = Clock()
    lease = Lease(clock)
    for op, arg in ops:
        before = lease.holder()
        if op == "wait":
            assert isinstance(arg, float)
            clock.now += arg
        elif op == "take":
            got = lease.take(str(arg), 10.0)
            if before in (None, arg):
                assert got is None and lease.holder() == arg
            else:
                assert got == before and lease.holder() == before
        elif op == "renew":
            last = lease.owner
            assert lease.renew(str(arg), 10.0) == (last == arg)
            if last == arg:
                assert lease.holder() == arg
        else:
            last = lease.owner
            assert lease.release(str(arg)) == (last == arg)
            if last == arg:
                assert lease.holder() is None
        assert (lease.holder() is None) == (lease.idle_for() is not None)
        idle = lease.idle_for()
        assert idle is None or idle >= 0.0


# -- the keeper -----------------------------------------------------------------------------


def _keeper(clock: Clock, backend: str = "sweep.engine", **kw: object) -> WarmKeeper:
    return WarmKeeper(_wanted(**kw), backend, Place("sweep-worker-x", "node", "0", 1, "host"), clock)


def test_a_keeper_serves_one_run_at_a_time() -> None:
    clock = Clock()
    k = _keeper(clock, code=code_digest("sweep.engine"))
    other = k.claim(_wanted("run-b", code=k.code))
    assert not other.granted and other.refused == "leased by run run-a"
    with pytest.raises(LeaseLost, match="not leased to run run-b"):
        k.begin("run-b")
    k.begin("run-a")
    assert k.describe().busy_s == 0.0
    k.end(3)
    assert k.release("run-a")
    got = k.claim(_wanted("run-b", code=k.code))
    assert got.granted and got.stale == () and got.state.owner == "run-b" and got.state.launches == 2
    assert got.state.tasks == 3
    with pytest.raises(LeaseLost):
        k.begin("run-a")  # the old run's calls are refused from now on


def test_a_call_of_an_ended_run_still_running_blocks_claims() -> None:
    clock = Clock()
    k = _keeper(clock)
    k.begin("run-a")
    clock.now += 120  # run a's driver died mid-call: its lease expired, the call runs on
    claim = k.claim(_wanted("run-b", code=k.code))
    assert (
        not claim.granted
        and claim.refused is not None
        and "still running a call of run run-a" in claim.refused
    )
    k.end(1)
    assert k.claim(_wanted("run-b", code=k.code)).granted


def test_a_claim_says_why_a_worker_is_stale() -> None:
    clock = Clock()
    k = _keeper(clock)
    k.release("run-a")
    assert k.claim(_wanted("run-b", code=k.code)).stale == ()
    k.release("run-b")
    stale = k.claim(_wanted("run-c", key="k2", code="other")).stale
    assert any("another sandbox spec or runtime environment" in s for s in stale)
    assert any(f"its code ({k.code}) is not the launching checkout's (other)" in s for s in stale)
    k.release("run-c")
    assert any(
        "serves another pool" in s for s in k.claim(_wanted("run-d", pool="H100 {}", code=k.code)).stale
    )


def test_a_backend_edited_on_disk_makes_the_worker_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_backend_mod.py").write_text("def evaluate(task, *, device, cache):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    clock = Clock()
    k = _keeper(clock, backend="my_backend_mod")
    assert k.changed() == ()
    (tmp_path / "my_backend_mod.py").write_text("def evaluate(task, *, device, cache):\n    return 1\n")
    changed = k.changed()
    assert len(changed) == 1 and "its code changed on disk since it started" in changed[0]
    k.release("run-a")
    claim = k.claim(_wanted("run-b", code=k.code))
    assert claim.granted and claim.stale == changed  # granted: the claimant stops it
    sys.modules.pop("my_backend_mod", None)


def test_an_unleased_keeper_exits_after_its_idle_timeout_and_refuses_claims() -> None:
    clock = Clock()
    k = _keeper(clock, idle_timeout_s=30.0)
    clock.now += 50
    assert not k.should_exit()  # leased to run a
    k.release("run-a")
    clock.now += 29
    assert not k.should_exit()
    clock.now += 2
    assert k.should_exit()
    refused = k.claim(_wanted("run-b", code=k.code))
    assert not refused.granted and refused.refused == "it is exiting (idle timeout)"


def test_a_worker_whose_lease_expired_counts_idle_from_the_expiry() -> None:
    clock = Clock()
    k = _keeper(clock, idle_timeout_s=30.0)  # lease 60 s, never renewed: its driver died
    clock.now += 60 + 29
    assert not k.should_exit()
    clock.now += 2
    assert k.should_exit()


def test_a_busy_keeper_does_not_exit() -> None:
    clock = Clock()
    k = _keeper(clock, idle_timeout_s=1.0)
    k.begin("run-a")
    k.release("run-a")
    clock.now += 100
    assert not k.should_exit()
    k.end(1)
    clock.now += 2
    assert k.should_exit()


# -- the fingerprint ------------------------------------------------------------------------


def test_code_digest_covers_sources_not_caches(tmp_path: Path) -> None:
    pkg = tmp_path / "sweep"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "data.json").write_text("{}")
    first = code_digest("sweep.engine", pkg)
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0\1")
    (pkg / "notes.txt").write_text("not code")
    assert code_digest("sweep.engine", pkg) == first
    (pkg / "sub" / "data.json").write_text('{"a": 1}')
    second = code_digest("sweep.engine", pkg)
    assert second != first
    (pkg / "sub" / "a.py").rename(pkg / "sub" / "b.py")  # same bytes, another module
    assert code_digest("sweep.engine", pkg) not in (first, second)


def test_launch_key_changes_with_each_part() -> None:
    spec = SandboxSpec(backend="sweep.engine", device_kind="cuda", preload=("torch",))
    base = launch_key(spec, "H100 {}", "{}")
    assert launch_key(replace(spec, workdir="/tmp/elsewhere"), "H100 {}", "{}") == base
    others = [
        launch_key(replace(spec, backend="other"), "H100 {}", "{}"),
        launch_key(replace(spec, device_kind="cpu"), "H100 {}", "{}"),
        launch_key(replace(spec, preload=()), "H100 {}", "{}"),
        launch_key(replace(spec, start_timeout_s=1.0), "H100 {}", "{}"),
        launch_key(spec, "H200 {}", "{}"),
        launch_key(spec, "H100 {}", '{"env_vars": {"TRITON_INTERPRET": "1"}}'),
        launch_key(replace(spec, env=(("CUDA_DEVICE_MAX_CONNECTIONS", "1"),)), "H100 {}", "{}"),
        launch_key(replace(spec, env=(("CUDA_DEVICE_MAX_CONNECTIONS", "4"),)), "H100 {}", "{}"),
    ]
    assert len({base, *others}) == len(others) + 1
    # No variables: the key such a worker had before the spec's variables were in it (main at 640fecd).
    assert base == "2c1a694f762d5467"


def test_env_changes_names_what_changed() -> None:
    now = worker_env()
    assert env_changes(now, now) == []
    assert dict(now.packages)["ray"] != "absent"
    older = WorkerEnv(now.python, now.executable, (("torch", "2.0.0"), ("triton", "absent")))
    words = env_changes(older, now)
    assert f"torch 2.0.0 -> {dict(now.packages)['torch']}" in words
    replaced = WorkerEnv(now.python, "0:0:0:0", now.packages)
    assert env_changes(replaced, now) == [f"the python executable was replaced ({sys.executable})"]

"""How tasks travel to a sandbox (records shared, by reference) and traces come back."""

from __future__ import annotations

import pickle
from pathlib import Path

from sweep.sandbox import Sandbox, SandboxSpec
from sweep.sandbox.packing import Done, Envelope, TaskPacker, load_task
from sweep.schema import Provenance, Status

from ..cluster.conftest import FAKE_BACKEND, toy_tasks


def test_tasks_of_one_solution_share_one_records_blob_and_round_trip() -> None:
    tasks = toy_tasks(["a", "b"], n_workloads=3)
    packer = TaskPacker()
    envs = [packer.pack(t, attempt=1) for t in tasks]
    assert len({e.records_key for e in envs}) == 2
    a0, a1 = envs[0], envs[1]
    assert a0.records == a1.records and a0.records_key == a1.records_key
    for env, task in zip(envs, tasks, strict=True):
        assert env.task() == task and env.task_id == task.task_id and env.attempt == 1
        # the per-task blob carries no definition or solution source
        assert task.solution.sources[0].content.encode() not in env.blob
        assert len(env.blob) < len(env.records)
    records = pickle.loads(a0.records)
    assert load_task(envs[2].blob, records) == tasks[2]
    # a lone envelope carries the same content under the same key
    assert Envelope.of(tasks[0]).records_key == a0.records_key


def test_a_plan_pickles_each_record_set_once() -> None:
    from sweep.plan import plan_config

    plan = plan_config(Path(__file__).resolve().parents[2] / "configs" / "local.yaml")
    packer = TaskPacker()
    envs = [packer.pack(t) for t in plan.tasks]
    sets = {(t.definition.name, t.solution.name) for t in plan.tasks}
    assert len({id(e.records) for e in envs}) == len({e.records_key for e in envs}) == len(sets)


def test_different_content_gets_a_different_records_key() -> None:
    one = toy_tasks(["a"])[0]
    other = toy_tasks(["a"], body="    y.copy_(x + 2)\n")[0]
    assert TaskPacker().pack(one).records_key != TaskPacker().pack(other).records_key


def test_done_stamps_the_trace_on_receipt() -> None:
    task = toy_tasks(["a"])[0]
    with Sandbox(SandboxSpec(backend=FAKE_BACKEND, preload=()), Provenance(run_id="r-9", gpu_id="3")) as sb:
        (done,) = sb.run_batch([Envelope.of(task, attempt=2)])
    assert isinstance(done, Done) and b"r-9" not in done.trace_json  # the sandbox does not stamp
    trace = done.trace(task)
    prov = trace.provenance
    assert prov is not None
    assert (prov.task_id, prov.run_id, prov.gpu_id, prov.attempt) == (task.task_id, "r-9", "3", 2)
    assert prov.started_at and prov.finished_at and prov.started_at <= prov.finished_at


def test_every_task_of_a_batch_gets_its_own_records_in_a_process_of_its_own() -> None:
    """Tasks of several solutions, interleaved: each runs with its own records (they travel with
    it), in a process no other task used."""
    names = ["a", "b", "c"]
    tasks = toy_tasks(names, n_workloads=2)
    order = [tasks[0], tasks[2], tasks[4], tasks[1], tasks[3], tasks[5], tasks[0]]  # a b c a b c a
    packer = TaskPacker()
    with Sandbox(SandboxSpec(backend=FAKE_BACKEND, preload=())) as sb:
        results = sb.run_batch([packer.pack(t) for t in order])
    traces = [d.trace(t) for d, t in zip(results, order, strict=True)]
    assert [t.solution for t in traces] == [t.solution.name for t in order]
    assert [t.workload.uuid for t in traces] == [t.workload.uuid for t in order]
    assert all(t.evaluation is not None and t.evaluation.status is Status.PASSED for t in traces)
    assert len({t.provenance.worker_pid for t in traces if t.provenance}) == len(order)

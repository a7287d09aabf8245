"""Hidden workloads through the real engine on the CPU: a solution that memorises the outputs
of the public inputs passes the public run's trials (their inputs are the seed's) but not its
timed calls (their fresh values are each evaluation's own), and fails the secret run's trials; a
secret run's trace keeps the commitment, not the secret nor its seed."""

from __future__ import annotations

import json
from pathlib import Path

from sweep.engine import EngineCache, evaluate
from sweep.schema import Definition, Workload
from sweep.schema.secret import commitment, verify
from sweep.schema.task import Task

SECRET = b"0123456789abcdef-not-a-real-secret"

_RECORDER = """import hashlib, json, torch

def run(x, y):
    z = x + y
    key = hashlib.sha256(x.contiguous().numpy().tobytes() + y.contiguous().numpy().tobytes()).hexdigest()
    with open({path!r}, "a") as f:
        f.write(json.dumps([key, z.tolist()]) + "\\n")
    return z
"""

_MEMORISER = """import hashlib, torch

TABLE = {table!r}

def run(x, y):
    key = hashlib.sha256(x.contiguous().numpy().tobytes() + y.contiguous().numpy().tobytes()).hexdigest()
    seen = TABLE.get(key)
    if seen is None:
        return torch.zeros_like(x)  # never saw these inputs: no idea
    return torch.tensor(seen, dtype=x.dtype)
"""


def _task(kit: object, vadd: Definition, wl: Workload, source: str, name: str, **settings: object) -> Task:
    sol = kit.solution("vadd_f32", source, name=name)  # type: ignore[attr-defined]
    base = kit.fast.model_copy(update=settings)  # type: ignore[attr-defined]
    return Task.make(vadd, sol, wl, base, "CPU", sweep="tests")


def test_memorised_public_outputs_pass_the_public_trials_only_and_fail_secret(
    kit: object, vadd: Definition, tmp_path: Path
) -> None:
    wl = Workload.model_validate(
        {
            "uuid": "secret-test-wl",
            "axes": {"N": 8},
            "inputs": {"x": {"type": "random"}, "y": {"type": "random"}},
        }
    )
    log = tmp_path / "seen.jsonl"
    # Record every input the engine draws for the public run (more timed calls than the runs
    # below make, so every input they meet is in the table).
    recorder = _task(
        kit, vadd, wl, _RECORDER.format(path=str(log)), "recorder", min_iterations=40, max_iterations=40
    )
    rec = evaluate(recorder, device="cpu", cache=EngineCache())
    assert rec.evaluation is not None and rec.evaluation.status.value == "PASSED", rec.evaluation
    table = {k: v for k, v in (json.loads(line) for line in log.read_text().splitlines())}
    assert len(table) >= 2

    memoriser = _task(kit, vadd, wl, _MEMORISER.format(table=table), "memoriser")
    public = evaluate(memoriser, device="cpu", cache=EngineCache())
    assert public.evaluation is not None
    assert public.evaluation.status.value.startswith("INCORRECT"), public.evaluation.log
    assert "(timed call" in public.evaluation.log and "(trial" not in public.evaluation.log

    secret_task = memoriser.with_secret(SECRET)
    assert secret_task.task_id != memoriser.task_id
    secret = evaluate(secret_task, device="cpu", cache=EngineCache())
    assert secret.evaluation is not None
    assert secret.evaluation.status.value.startswith("INCORRECT"), secret.evaluation.status
    assert "(trial 0)" in secret.evaluation.log, secret.evaluation.log  # its first input set is new
    # The trace carries the commitment, never the secret, the salt or the seed of the inputs.
    assert secret.provenance is not None
    stored = secret.provenance.secret_commitment
    assert stored == commitment(SECRET, "vadd_f32", wl.uuid)
    assert verify(SECRET, "vadd_f32", wl.uuid, stored)
    assert not verify(b"another secret of enough bytes", "vadd_f32", wl.uuid, stored)
    assert secret.evaluation.seed is None
    text = secret.to_json()
    assert SECRET.decode() not in text and secret_task.secret_salt not in text  # type: ignore[operator]
    # The public run's trace has no commitment; an honest solution passes both.
    assert public.provenance is None or public.provenance.secret_commitment is None
    honest = _task(kit, vadd, wl, "def run(x, y):\n    return x + y\n", "honest").with_secret(SECRET)
    ok = evaluate(honest, device="cpu", cache=EngineCache())
    assert ok.evaluation is not None and ok.evaluation.status.value == "PASSED"


def test_every_solution_of_a_workload_meets_the_same_secret_inputs() -> None:
    from sweep.schema.secret import input_salt

    a = input_salt(SECRET, "vadd_f32", "w1")
    assert a == input_salt(SECRET, "vadd_f32", "w1")
    assert len({a, input_salt(SECRET, "vadd_f32", "w2"), input_salt(SECRET, "other", "w1")}) == 3
    assert a != commitment(SECRET, "vadd_f32", "w1")  # the stored value tells nothing of the salt

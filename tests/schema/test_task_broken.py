"""``Task.broken``: why a solution cannot be evaluated; part of a broken task's id only, so
every valid task keeps the id it always had."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sweep.schema.task import task_id


def test_valid_task_ids_are_what_they_always_were() -> None:
    # Pinned: computed before ``broken`` existed.
    assert task_id("d", "h", "w", "s", "CPU") == "65e2c1d58f3463d20867"
    assert task_id("d", "h", "w", "s", "CPU", {"B": 1}) == "590eb33dfd8d39c8e476"
    assert task_id("d", "h", "w", "s", "CPU", None, None) == "65e2c1d58f3463d20867"


@given(st.text(max_size=200), st.text(max_size=200))
def test_a_broken_task_never_shares_an_id(reason: str, other: str) -> None:
    """Property: a broken task's id differs from the valid task's of the same record, and
    from one broken for another reason."""
    broken = task_id("d", "h", "w", "s", "H100", None, reason)
    assert broken != task_id("d", "h", "w", "s", "H100")
    assert broken == task_id("d", "h", "w", "s", "H100", None, reason)
    if other != reason:
        assert broken != task_id("d", "h", "w", "s", "H100", None, other)

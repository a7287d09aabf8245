"""A launch's results: each trace appended and fsynced to a JSONL log first, then loaded into the store
by a follower process (typed messages), the store written by the driver alone."""

__all__: list[str] = []  # the stage's top level alone uses this wing

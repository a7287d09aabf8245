"""One evaluation's phases, in order, and the two call paths they drive (named inputs, ATen calls): the
run's shared state, the timing phase, the work of a call and the roofline, the process's cache."""

__all__: list[str] = []  # the stage's top level alone uses this wing

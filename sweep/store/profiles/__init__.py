"""Profiles (Nsight Compute, compute-sanitizer) parsed and stored."""

__all__: list[str] = []  # the stage's top level alone uses this wing

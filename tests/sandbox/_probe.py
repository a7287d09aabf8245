"""What a confined process may do, asked of a process of its own: each attempt of a probe script
ends as ``allowed`` or as the name of the error it raised (``EPERM``, ``EACCES``, ``EXDEV``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_ATTEMPT = """
import errno, json
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "allowed"
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno or 0, f"other: {e}")
"""


def run_probe(body: str, *args: str) -> dict[str, str]:
    """Run ``body`` (a script that calls ``attempt(name, fn)`` and may set ``out[...]``) with
    ``args`` in a new interpreter; what it put in ``out``."""
    script = _ATTEMPT + textwrap.dedent(body) + "\nprint(json.dumps(out))\n"
    done = subprocess.run(
        [sys.executable, "-c", script, *args], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    got: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return got

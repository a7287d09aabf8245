"""Hidden workloads: a secret mixed into every input seed of a launch, and the commitment each
trace keeps instead of it.

A launch given ``--secret-file`` draws every input from a seed that depends on the secret, so
a solution tuned to (or memorising) the public inputs meets values it has never seen. The
secret itself goes nowhere: not into the config, the tasks, the traces or the logs. A task
carries only :func:`input_salt` (which tells nothing of the secret: a one-way hash of it), and
its trace only :func:`commitment`, another one-way hash of the secret and the task's identity
(definition and workload), so that once the secret is revealed anyone can check that the
stored secret runs used it (:func:`verify`), while before then the commitment gives nothing
away (the secret is at least :data:`MIN_SECRET_BYTES` random-looking bytes).
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from sweep.errors import ConfigError, clip, reason

__all__ = ["MAX_SECRET_BYTES", "MIN_SECRET_BYTES", "commitment", "input_salt", "read_secret", "verify"]

#: The shortest secret accepted: 16 bytes (128 bits) cannot be guessed from a commitment.
MIN_SECRET_BYTES = 16
#: The longest secret file read.
MAX_SECRET_BYTES = 4096


def read_secret(path: str | Path) -> bytes:
    """The secret in a file (surrounding whitespace dropped), checked long enough.

    Raises:
        ConfigError: The file cannot be read, is not a regular file, is too large, or holds
            fewer than :data:`MIN_SECRET_BYTES` bytes. The message never quotes the content.
    """
    from sweep.schema.limits import read_bytes

    try:
        raw = read_bytes(path, MAX_SECRET_BYTES)
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path, or FileRefused
        raise ConfigError(f"--secret-file {clip(str(path))}: cannot read: {reason(e)}") from None
    secret = raw.strip()
    if len(secret) < MIN_SECRET_BYTES:
        raise ConfigError(
            f"--secret-file {clip(str(path))}: the secret is {len(secret)} bytes; at least "
            f"{MIN_SECRET_BYTES} are needed so its commitments cannot be guessed; make one with "
            "`python -c 'import secrets; print(secrets.token_hex(32))' > secret.txt`"
        )
    return secret


def _mac(secret: bytes, purpose: str, definition: str, workload_uuid: str) -> str:
    # HMAC keyed by the secret; the parts joined by a separator no part contains (0x1f is
    # refused in names and uuids), so two different tasks never share a message.
    text = f"kernel-sweep\x1f{purpose}\x1f{definition}\x1f{workload_uuid}"
    message = text.encode("utf-8", "surrogatepass")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def input_salt(secret: bytes, definition: str, workload_uuid: str) -> str:
    """What a task's input seeds are mixed with (hex): the same for every solution of one
    workload, so all are checked and timed on the same secret inputs."""
    return _mac(secret, "inputs", definition, workload_uuid)


def commitment(secret: bytes, definition: str, workload_uuid: str) -> str:
    """What a secret run's trace stores (hex): verifiable once the secret is revealed."""
    return _mac(secret, "commitment", definition, workload_uuid)


def verify(secret: bytes, definition: str, workload_uuid: str, stored: str) -> bool:
    """Whether ``stored`` is the commitment of ``secret`` for this task (constant time)."""
    return hmac.compare_digest(commitment(secret, definition, workload_uuid), stored)

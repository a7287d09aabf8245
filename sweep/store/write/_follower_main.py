"""The store follower process: ``python -m sweep.store.write._follower_main`` (see
:mod:`sweep.store.write._follower`). A module of its own so that its messages' classes are the
package's, not copies in ``__main__``. Nothing imports this module; it only runs as a program.
"""

from __future__ import annotations

from sweep.store.write._follower import main

if __name__ == "__main__":
    main()

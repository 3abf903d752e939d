"""What a strategy's search may start from in ``kiln bench``, and which stored records kept to it.

The table answers "how does this strategy compare with full-effort ``lfbo`` when
a package is built for the first time": the lock holds nothing for the kernel
yet, so a strategy's only seeds are the configs it chose itself for the kernel's
shapes tuned earlier in the build (the middle declared shape first, cold).

The committed ``kiln.lock`` is not such a source.  ``kiln bench --to-lock``
fills it from the bench's own records, ``lfbo``'s wherever ``lfbo`` won, so
seeding from it hands a strategy the very search it is measured against, at the
kernel's other shapes.  Sessions 10 to 22 did exactly that (24 of 28 ``seeded``
rows started from such entries); records made that way are reported apart and
rerun.  Builds keep seeding from the lock: that is a product feature, not a
benchmark rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SEEDING = "first build: this strategy's own results at the kernel's other shapes, earlier in build order (no lock entries)"
# The rule of sessions 10-22's records.
LOCK_SEEDING = "build-order: lock entries at other shapes + this strategy's own results at other shapes"


def seeded_as_now(record: Mapping[str, Any]) -> bool:
    """Whether ``record``'s search started from what ``SEEDING`` allows.

    A record made under the older rule that happened to take nothing from the
    lock (a kernel with no lock entries yet) had exactly today's seeds, so it
    stands; one that took lock entries does not.
    """
    seeding = record.get("seeding")
    return seeding == SEEDING or (seeding == LOCK_SEEDING and not record.get("seeds_from_lock"))

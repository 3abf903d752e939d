"""`kiln bench`: tuning strategies against LFBO, case by case, into a resumable results store.

- :mod:`.store`: the JSON store (keyed by GPU and toolchain versions, then case, then strategy).
- :mod:`.run`: tune cases x strategies through the engine; re-measure in a fresh process.
- :mod:`.roofline`: bytes and FLOPs per case, and the GPU's measured peaks.
- :mod:`.report`: markdown table, PNG plots and the JSON summary against ``lfbo``.
"""

DEFAULT_STORE = "bench/results/store.json"
BASELINE = "lfbo"

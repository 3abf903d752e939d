"""What ``hybrid``'s LFBO stage must not redo from its LLM stage: the same random configs.

Each Helion search seeds Python's ``random`` from ``autotune_random_seed`` when it
starts, so stage 2's random padding (kiln asks for it, to reach ``seeded``'s
population size) drew the very configs stage 1 had benchmarked beside the LLM's
answers.  On the H200 (session 13, rms_norm@medium) stage 2 re-benchmarked them
and waited out again a compile that stage 1 had already timed out.  Stage 2's
surrogate is trained on stage 1's results anyway (Helion's ``seed_training_data``),
so stage 2 draws from its own stream instead: as many random configs as before,
new ones, and still the same on every run with the same seed.
"""

from __future__ import annotations

import random
from typing import Any

STAGE2_STREAM = "kiln-hybrid-stage2"


def own_random_stream(search: Any) -> None:
    """Reseed ``random`` for ``search`` right after Helion seeds it, with a stream of its own."""
    original = search._prepare

    def prepare() -> None:
        first = not search._prepared
        original()
        if first:  # Helion has just called random.seed(autotune_random_seed)
            random.seed(f"{STAGE2_STREAM}:{search.settings.autotune_random_seed}")

    search._prepare = prepare

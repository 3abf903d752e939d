"""Seeds from other shapes, placed on this shape's config space before Helion sees them.

A config tuned at one shape can hold a value another shape's space does not have:
softmax tuned at 32768 columns rolls its reduction in chunks of 8192, and at 1024
columns the largest chunk is 1024.  Helion 1.5.0 transfers the configs given to
``set_best_available_seed_configs`` catching ValueError, TypeError, KeyError and
AssertionError but not its own ``InvalidConfig`` (base_search.py,
``_generate_best_available_population_flat``), so one such seed ended the whole
search: on the H200 (session 19) ``seeded`` on softmax@small failed with "Invalid value
for reduction loop 8 <= 8192 <= 1024", and a build tuning that shape after the large one
was in the lock would have failed the same way.

Each seed goes through the same transfer Helion makes (flatten, then unflatten on this
shape's space).  One that fails is repaired where the meaning is clear (a reduction
chunk at least as long as this shape's axis is a whole, persistent reduction, which is
how Helion reads such a chunk itself) and tried again; one that still fails is left
out and named, and the search goes on from the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Transferred:
    """The seeds that fit, in the order given, and what had to be done to the others."""

    configs: list[Any] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    def provenance(self) -> dict[str, Any]:
        """For the lock entry; empty when every seed fitted as it was."""
        out: dict[str, Any] = {}
        if self.repaired:
            out["repaired"] = self.repaired
        if self.dropped:
            out["dropped"] = self.dropped
        return out


def transfer_errors() -> tuple[type[BaseException], ...]:
    from helion.exc import InvalidConfig

    return (InvalidConfig, ValueError, TypeError, KeyError, AssertionError)


def reduction_axes(config_spec: Any) -> list[int]:
    """This shape's reduction axis lengths, in ``reduction_loops`` order (Helion's size hints)."""
    return [spec.size_hint for spec in getattr(config_spec, "reduction_loops", ())]


def whole_reductions(seed: dict[str, Any], size_hints: Sequence[int]) -> dict[str, Any] | None:
    """``seed`` with each reduction chunk at least as long as this shape's axis made whole (``None``).

    ``None`` when nothing changes, so the caller knows there is no repair to try.
    """
    loops = seed.get("reduction_loops")
    if not isinstance(loops, list) or len(loops) != len(size_hints):
        return None
    fixed = [None if isinstance(v, int) and v >= int(size) else v for v, size in zip(loops, size_hints, strict=True)]
    return None if fixed == loops else {**seed, "reduction_loops": fixed}


def transfer_seeds(seeds: Sequence[dict[str, Any]], config_gen: Any,
                   log: Callable[[str], None] = lambda _m: None) -> Transferred:
    """``seeds`` as ``helion.Config``\\ s that Helion can place on ``config_gen``'s space.

    ``config_gen`` is the search's own ``ConfigGeneration`` (``search.config_gen``), so
    the check is the one its first population makes, on the config spec it holds.
    """
    import helion

    errors = transfer_errors()
    sizes = reduction_axes(config_gen.config_spec)
    out = Transferred()

    def fits(seed: dict[str, Any]) -> Exception | None:
        try:
            config_gen.unflatten(config_gen.flatten(helion.Config(**seed)))
        except errors as e:
            return e
        return None

    for i, seed in enumerate(seeds):
        error = fits(seed)
        if error is None:
            out.configs.append(helion.Config(**seed))
            continue
        repaired = whole_reductions(seed, sizes)
        if repaired is not None and fits(repaired) is None:
            note = f"seed {i + 1}: reduction_loops {seed['reduction_loops']} -> {repaired['reduction_loops']} ({error})"
            out.configs.append(helion.Config(**repaired))
            out.repaired.append(note)
            log(f"kiln: repaired {note}")
        else:
            why = type(error).__name__ + (f": {error}" if str(error) else "")
            note = f"seed {i + 1}: does not fit this shape's config space ({why})"
            out.dropped.append(note)
            log(f"kiln: left out {note}")
    return out

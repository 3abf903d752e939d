"""Reference model package: the 11 kernel families of the LLM-vs-LFBO study, in Helion.

Built by this repository's own pyproject through the kiln backend, so the
installed wheel runs configs tuned at build time.  The one line below is the
whole opt-in.
"""

from __future__ import annotations

from tuning.runtime import use_baked_configs

baked = use_baked_configs(__name__)

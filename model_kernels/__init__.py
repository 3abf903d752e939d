"""Reference model package: the 11 kernel families of the LLM-vs-LFBO study, in Helion.

Built by this repository's own pyproject through the kiln backend, so the
installed wheel runs configs tuned at build time.  The one line below is the
whole opt-in.

Each family module holds the Helion kernel, ``<kernel>_ref`` (the same math in
fp32 PyTorch: the accuracy reference) and, where PyTorch has a faster path,
``<kernel>_baseline(*args) -> (call, description)``: what a model would run
instead, at the input dtype, with anything it needs prepared before ``call``.
Speed is compared against the baseline (``kiln bench``,
``bench/model_kernels_gpu.py``), never against the slow fp32 reference, unless
there is no baseline, and then the results say so.
"""

from __future__ import annotations

from tuning.runtime import use_baked_configs

baked = use_baked_configs(__name__)

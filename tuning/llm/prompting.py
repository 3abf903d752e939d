"""What leaves the machine: withholding the kernel source from Helion's prompts.

Helion's round-0 prompt (``llm/prompting.py: build_initial_prompt``) opens
with ``llm/workload.py: describe_kernel``, whose second section is::

    ## Kernel Source Code
    ```python
    <inspect.getsource of the kernel function, from its `def` line>
    ```

Refinement prompts carry only configs and timings.  With
``llm_send_source = false`` the messages are filtered in the transport seam,
just before they are sent (and logged): the section is replaced by a note,
any verbatim copy of the source is cut, and if the kernel's ``def`` line is
still found anywhere the request is refused rather than sent.
"""

from __future__ import annotations

import re
from typing import Any

from .transport import LlmUnavailable

WITHHELD = (
    "## Kernel Source Code\n(withheld by the build's settings: propose configs from the input tensors, "
    "hardware and configuration space below)"
)
_SECTION = re.compile(r"## Kernel Source Code\n```[a-z]*\n.*?\n```(?=\n\n## |\n*\Z)", re.DOTALL)


def kernel_source(kernel: Any) -> str | None:
    """The source text Helion puts in the prompt, or None when it has none."""
    try:
        from helion.autotuner.llm.workload import _kernel_source_text

        text = _kernel_source_text(kernel)
    except Exception:
        return None
    return None if not text.strip() or text.startswith("# Source unavailable") else text


def withhold_source(messages: list[dict[str, str]], kernel: Any) -> list[dict[str, str]]:
    """``messages`` without the kernel source; raises LlmUnavailable if it cannot be removed."""
    source = kernel_source(kernel)
    out = []
    for m in messages:
        content = _SECTION.sub(lambda _: WITHHELD, m.get("content", ""))
        if source:
            content = content.replace(source, "(withheld)")
        out.append({**m, "content": content})
    if source:
        first = next((line.strip() for line in source.splitlines() if line.strip()), "")
        if first and any(first in m["content"] for m in out):
            raise LlmUnavailable("the kernel source could not be withheld from the prompt; not sending it")
    return out

"""How the bench scripts that write sorted, indent-1 JSON write it: one format, so results diff cleanly.

Why one place: the probes and summaries under ``bench/`` are rerun session after session and their
outputs are committed; a script that wrote keys unsorted or another indent would show a whole-file
diff for an unchanged result, and a regenerated file is checked byte for byte against the committed one.
The GPU scripts that write indent 2 (``strategies_gpu.py``, ``foundation_gpu.py``, ...) and the few
unsorted ones keep their own format: moving them here would rewrite every committed output of theirs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def dumps(doc: Any) -> str:
    """``doc`` as the committed results hold it: sorted keys, indent 1, a final newline."""
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def emit(doc: Any, out: Path | None) -> None:
    """Write ``doc`` to ``out``, or to standard output where no file is named."""
    if out is None:
        sys.stdout.write(dumps(doc))
    else:
        out.write_text(dumps(doc))

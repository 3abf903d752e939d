"""A loopback OpenAI chat-completions server that answers with fixed configs: not an LLM.

Why: no LLM is reachable from the GPU machines, but ``hybrid`` and ``llm`` must
still be shown working end to end -- litellm, the prompt, the answer sanitizer,
the search, the store -- on real cases. This server stands where the LLM would.
Its answers are known-good configs from a lock: for a prompt that names a kernel
of the lock, the configs the lock holds for that kernel (every shape; the
sanitizer drops what does not fit the shape asked about); for any other prompt,
an empty list. The benchmarked cases' own entries are left out (``--exclude``),
so it knows what a lock of the kernel's other shapes knows, as ``seeded`` does. Every number it produces is labelled ``fixed-answers``, and
``kiln bench --report`` says that it is not an LLM's.

Standalone, for ``kiln bench`` (``bench/run_x2_gpu.sh llm-bench``)::

    python bench/fixed_answer_llm.py --lock kiln.lock --exclude CASE,... --port-file /tmp/port &
    OPENAI_API_KEY=sk-local-fixed-answers kiln bench --strategies lfbo,hybrid,llm \\
        -C llm_model=openai/fixed-answers -C llm_api_base=http://127.0.0.1:$(cat /tmp/port)/v1
"""

from __future__ import annotations

import argparse
import http.server
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

MODEL = "openai/fixed-answers"  # kiln bench --report labels this model id "not an LLM"


def completion(content: str) -> bytes:
    """An OpenAI chat-completions response body carrying ``content``."""
    doc = {
        "id": "fixed", "object": "chat.completion", "created": 0, "model": "fixed-answers",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }
    return json.dumps(doc).encode()


def lock_answers(lock_path: Path, exclude: frozenset[str] = frozenset()) -> Callable[[str], list[dict[str, Any]]]:
    """prompt -> the lock's configs of the kernel the prompt names (longest kernel name first).

    ``exclude`` holds ``kernel_id@shape_name`` labels whose own entries must not be
    served: the cases being benchmarked, so the stand-in cannot hand back the answer.
    """
    by_kernel: dict[str, list[dict[str, Any]]] = {}
    for e in json.loads(lock_path.read_text())["entries"]:
        if f"{e['kernel']}@{e.get('shape_name')}" in exclude:
            continue
        by_kernel.setdefault(e["kernel"], [])
        if e["config"] not in by_kernel[e["kernel"]]:
            by_kernel[e["kernel"]].append(e["config"])
    names = sorted(((kid.rpartition(":")[2], kid) for kid in by_kernel), key=lambda p: -len(p[0]))

    def answer(prompt: str) -> list[dict[str, Any]]:
        for short, kid in names:
            if kid in prompt or f"def {short}(" in prompt:
                return by_kernel[kid]
        return []

    return answer


def serve(answer: Callable[[str], list[dict[str, Any]]], port: int = 0) -> tuple[str, http.server.ThreadingHTTPServer]:
    """Start the server on a daemon thread; return its ``api_base`` and the server (call ``shutdown()``)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            request = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
            data = completion(json.dumps({"configs": answer(prompt)}))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:  # quiet: kiln's own LLM log records the exchange
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1", server


def fixed_answer_server(configs: list[dict[str, Any]]) -> tuple[str, http.server.ThreadingHTTPServer]:
    """A server that proposes ``configs`` whatever it is asked (bench/strategies_gpu.py, one case at a time)."""
    return serve(lambda prompt: configs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lock", required=True, type=Path, help="answers come from this lock's configs")
    ap.add_argument("--exclude", default="", help="comma list of kernel_id@shape_name whose own entries are not served "
                    "(the cases being benchmarked)")
    ap.add_argument("--port", type=int, default=0, help="0: any free port")
    ap.add_argument("--port-file", type=Path, help="write the chosen port here once listening")
    opts = ap.parse_args()
    exclude = frozenset(c.strip() for c in opts.exclude.split(",") if c.strip())
    api_base, server = serve(lock_answers(opts.lock, exclude), opts.port)
    if opts.port_file:
        opts.port_file.write_text(str(server.server_address[1]))
    print(f"fixed answers from {opts.lock} at {api_base} (model id {MODEL}; not an LLM)", flush=True)
    threading.Event().wait()  # until killed


if __name__ == "__main__":
    main()

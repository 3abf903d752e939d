"""The [tool.kiln] settings model, kept apart from where values come from.

Sources, later wins: ``[tool.kiln]`` in pyproject.toml < ``-C kiln.<key>=...``
config settings < ``KILN_<KEY>`` environment variables.  Every value is
checked here, once, so the rest of the build can trust it; a bad one fails
the build with the key, where it came from, and the closest valid choice.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from tuning.errors import SettingsError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# Environment names that belong to the runtime, not to build settings.
RUNTIME_ENV = {"KILN_BUILDING", "KILN_STRICT", "KILN_RUNTIME_AUTOTUNE"}
ENV_IGNORED_PREFIXES = ("KILN_TEST_",)


def _strategies() -> list[str]:
    from tuning.strategies import STRATEGY_NAMES

    return list(STRATEGY_NAMES)


@dataclass(frozen=True)
class Key:
    """How one setting is typed, defaulted, documented and validated."""

    kind: str  # "str" | "int" | "optint" | "list" | "choice" | "table"
    default: Any
    help: str
    choices: Callable[[], list[str]] | None = None


KEYS: dict[str, Key] = {
    "packages": Key("list", None, "packages to scan for Helion kernels (default: the project's import name)"),
    "strategy": Key("choice", "auto", "tuning strategy (auto: hybrid with an LLM, else seeded)", choices=_strategies),
    "effort": Key("choice", "full", "Helion effort profile for the search", choices=lambda: ["quick", "full"]),
    "max_generations": Key("optint", None, "cap on search generations per case"),
    "initial_population": Key("optint", None, "size of the search's initial population"),
    "polish_rounds": Key("optint", None, "LFBO polish rounds after the search"),
    "seconds": Key("optint", None, "wall-clock budget per case, in seconds"),
    "max_configs": Key("optint", None, "configs benchmarked per case, at most (checked between search rounds)"),
    "total_seconds": Key("optint", None, "wall-clock budget for all tuning in one build"),
    "seed": Key("int", 0, "random seed of the search, recorded in the lock"),
    "lock": Key("str", "kiln.lock", "path of the lock, relative to the project"),
    "missing": Key("choice", "warn", "what a declared shape with no lock entry does when nothing can tune it",
                   choices=lambda: ["warn", "error"]),
    "include": Key("list", ["*"], "glob patterns of kernel ids this build may tune"),
    "device": Key("choice", "auto", "where to tune: auto (a CUDA GPU if present), cuda, cpu, none",
                  choices=lambda: ["auto", "cuda", "cpu", "none"]),
    "executor": Key("choice", "auto", "auto (local when several GPUs are visible), serial, local, "
                    "ray (one Ray task per case, one GPU each; needs pip install ray)",
                    choices=lambda: ["auto", "serial", "local", "ray"]),
    "workers": Key("optint", None, "local executor: worker processes (default: one per visible GPU)"),
    "ray_address": Key("str", None, "ray executor: cluster address (host:port, or auto for a running cluster; "
                       "default: what ray.init() does without one: RAY_ADDRESS, a local `ray start` cluster, "
                       "else a new local runtime)"),
    "report": Key("str", "", "path of a JSON report of this build's cases (empty: none)"),
    "llm_model": Key("str", "", "litellm model id (e.g. openai/gpt-5.5, anthropic/claude-sonnet-4-6); empty: no LLM"),
    "llm_api_base": Key("str", "", "base URL of an on-prem or proxy endpoint (vLLM, Ollama, any OpenAI-compatible)"),
    "llm_timeout": Key("int", 60, "seconds per LLM request"),
    "llm_retries": Key("int", 2, "retries per LLM request, with backoff"),
    "llm_rounds": Key("int", 1, "LLM proposal rounds per case"),
    "llm_configs_per_round": Key("int", 6, "configs the LLM proposes per round"),
    "llm_send_source": Key("bool", True, "include the kernel source in prompts (false: withhold it)"),
    "llm_log": Key("str", "kiln-llm.log", "prompt/response log, outside the wheel, keys redacted"),
    "shapes": Key("table", {}, "declared shapes: [tool.kiln.shapes.\"pkg.mod:kernel\"] name = [args]"),
}


@dataclass(frozen=True)
class Settings:
    project_dir: Path
    project_name: str
    packages: list[str]
    strategy: str = "auto"
    effort: str = "full"
    max_generations: int | None = None
    initial_population: int | None = None
    polish_rounds: int | None = None
    seconds: int | None = None
    max_configs: int | None = None
    total_seconds: int | None = None
    seed: int = 0
    lock: str = "kiln.lock"
    missing: str = "warn"
    include: list[str] = field(default_factory=lambda: ["*"])
    device: str = "auto"
    executor: str = "auto"
    workers: int | None = None
    ray_address: str | None = None
    report: str = ""
    llm_model: str = ""
    llm_api_base: str = ""
    llm_timeout: int = 60
    llm_retries: int = 2
    llm_rounds: int = 1
    llm_configs_per_round: int = 6
    llm_send_source: bool = True
    llm_log: str = "kiln-llm.log"
    shapes: Mapping[str, Any] = field(default_factory=dict)
    origins: Mapping[str, str] = field(default_factory=dict)

    @property
    def lock_path(self) -> Path:
        return (self.project_dir / self.lock).resolve()

    @property
    def resolved_strategy(self) -> str:
        from tuning.strategies import resolve_name

        return resolve_name(self.strategy, bool(self.llm_model))

    def llm_settings(self) -> Any:
        """The LLM connection, or None when no model is configured."""
        if not self.llm_model:
            return None
        from tuning.strategies import LlmSettings

        return LlmSettings(
            model=self.llm_model, api_base=self.llm_api_base or None, timeout_s=float(self.llm_timeout),
            retries=self.llm_retries, rounds=self.llm_rounds, configs_per_round=self.llm_configs_per_round,
            send_source=self.llm_send_source, log_path=str(self.project_dir / self.llm_log) if self.llm_log else None,
        )


def _suggest(word: str, valid: list[str]) -> str:
    near = difflib.get_close_matches(word, valid, n=1, cutoff=0.5)
    hint = f" Did you mean {near[0]!r}?" if near else ""
    return f"{hint} Valid: {', '.join(valid)}."


def _coerce(key: str, spec: Key, value: Any, origin: str) -> Any:
    """Check one value; strings from -C and the environment are parsed first."""
    from_text = isinstance(value, str) and not origin.startswith("pyproject")
    where = f"setting {key!r} (from {origin})"
    if spec.kind == "table":
        if from_text:
            raise SettingsError(f"{where}: shapes can only be declared in pyproject.toml under [tool.kiln.shapes].")
        if not isinstance(value, Mapping):
            raise SettingsError(f"{where}: expected a table of kernel ids, got {value!r}.")
        return dict(value)
    if spec.kind == "list":
        if from_text:
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise SettingsError(f"{where}: expected a list of strings, got {value!r}.")
        return value
    if spec.kind == "bool":
        if from_text:
            low = value.strip().lower()
            if low not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise SettingsError(f"{where}: expected true or false, got {value!r}.")
            return low in ("1", "true", "yes", "on")
        if not isinstance(value, bool):
            raise SettingsError(f"{where}: expected true or false, got {value!r}.")
        return value
    if spec.kind in ("int", "optint"):
        if spec.kind == "optint" and (value is None or (from_text and value.strip().lower() in ("", "none"))):
            return None
        if from_text:
            try:
                value = int(value.strip())
            except ValueError:
                raise SettingsError(f"{where}: expected an integer, got {value!r}.") from None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SettingsError(f"{where}: expected a non-negative integer, got {value!r}.")
        return value
    if not isinstance(value, str):
        raise SettingsError(f"{where}: expected a string, got {value!r}.")
    if spec.kind == "choice":
        assert spec.choices is not None
        valid = spec.choices()
        if value not in valid:
            raise SettingsError(f"{where}: {value!r} is not valid.{_suggest(value, valid)}")
    return value


def _unknown(name: str, origin: str, spelled: Callable[[str], str]) -> SettingsError:
    valid = sorted(KEYS)
    near = difflib.get_close_matches(name, valid, n=1, cutoff=0.5)
    hint = f" Did you mean {spelled(near[0])!r}?" if near else ""
    return SettingsError(
        f"unknown setting {spelled(name)!r} (from {origin}).{hint} Valid keys: {', '.join(spelled(k) for k in valid)}."
    )


def read_pyproject(project_dir: Path) -> dict[str, Any]:
    path = project_dir / "pyproject.toml"
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise SettingsError(f"{path} not found: the kiln backend needs a pyproject.toml") from None
    except tomllib.TOMLDecodeError as e:
        raise SettingsError(f"{path}: invalid TOML ({e})") from None


def load_settings(
    project_dir: Path,
    config_settings: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    project_dir = Path(project_dir).resolve()
    doc = read_pyproject(project_dir)
    project_name = str(doc.get("project", {}).get("name", project_dir.name))
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}

    def put(key: str, value: Any, origin: str) -> None:
        values[key] = _coerce(key, KEYS[key], value, origin)
        origins[key] = origin

    table = doc.get("tool", {}).get("kiln", {})
    for key, value in table.items():
        if key not in KEYS:
            raise _unknown(key, "pyproject.toml [tool.kiln]", lambda k: k)
        put(key, value, "pyproject.toml [tool.kiln]")
    for raw_key, value in (config_settings or {}).items():
        if not raw_key.startswith("kiln."):
            continue  # setuptools' own config settings pass through untouched
        key = raw_key[len("kiln."):].replace("-", "_")
        if key not in KEYS:
            raise _unknown(key, f"-C {raw_key}", lambda k: f"kiln.{k}")
        if isinstance(value, list):  # pip passes repeated -C keys as a list
            value = value[-1]
        put(key, value, f"-C {raw_key}")
    for env_key, value in sorted((environ or {}).items()):
        if not env_key.startswith("KILN_") or env_key in RUNTIME_ENV or env_key.startswith(ENV_IGNORED_PREFIXES):
            continue
        key = env_key[len("KILN_"):].lower()
        if key not in KEYS:
            raise _unknown(key, f"environment {env_key}", lambda k: f"KILN_{k.upper()}")
        put(key, value, f"environment {env_key}")

    if values.get("packages") is None:
        values["packages"] = [project_name.replace("-", "_").replace(".", "_").lower()]
    known = {f.name for f in fields(Settings)}
    return Settings(
        project_dir=project_dir,
        project_name=project_name,
        origins=origins,
        **{k: v for k, v in values.items() if k in known},
    )

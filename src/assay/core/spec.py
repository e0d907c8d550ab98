"""What a run is made of (:class:`RunSpec`): stored with the run, shared by the engine,
the store and the readers."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from assay.core.checks import check_json_finite, check_number
from assay.core.redact import content_secrets, redact_tree, redact_url
from assay.errors import ConfigError

#: the largest reply (bytes of text) a model may send before it is the sample's error
DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024
#: spec keys renamed in schema 4: old name -> new name
RENAMED_SPEC_KEYS = {"benchmark": "task", "benchmark_options": "task_options"}


def current_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A stored spec in today's names (a spec of schema 3 or older named ``benchmark``)."""
    out = {RENAMED_SPEC_KEYS.get(k, k): v for k, v in spec.items()}
    if isinstance(out.get("redacted"), list):
        out["redacted"] = [_renamed_path(p) for p in out["redacted"]]
    return out


def _renamed_path(path: Any) -> Any:
    if not isinstance(path, str):
        return path
    head, dot, rest = path.partition(".")
    return RENAMED_SPEC_KEYS.get(head, head) + dot + rest


#: where a run's samples may run (``--executor``)
EXECUTORS = ("local", "ray")


@dataclass
class RunSpec:
    """Everything needed to (re)build a run. Stored with the run; never holds secrets."""

    task: str
    model: str = "local"
    task_options: dict[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    timeout: float = 120.0
    max_connections: int = 32
    max_retries: int = 5
    retry_initial: float = 1.0
    sample_timeout: float | None = None
    limit: int | None = None
    sample_ids: list[str] | None = None
    epochs: int = 1
    seed: int | None = None
    cache: bool = True
    params: dict[str, Any] = field(default_factory=dict)
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES
    #: at most this many model calls start per minute (``None``: no limit)
    rpm: float | None = None
    #: run code from data or a model weakly isolated where bubblewrap fails (else: refused)
    allow_weak_sandbox: bool = False
    #: the run ends ``failed`` past this share of errored samples (1.0: only if all errored)
    max_error_rate: float = 1.0
    #: the same model at several URLs (``--base-url`` repeated): calls spread by load
    endpoints: list[str] | None = None
    #: where the samples run: ``local`` (this process) or ``ray`` (actors of a Ray cluster)
    executor: str = "local"
    #: Ray actors (``None``: one per CPU of the cluster)
    workers: int | None = None
    #: the Ray cluster: ``auto``, ``ray://host:port``, or ``None`` to start a local one
    ray_address: str | None = None
    #: a YAML file of prices (USD per million tokens) over genai-prices' (``--pricing``)
    pricing: str | None = None
    #: the whole run's budget (every session): no new sample starts past one
    cost_limit: float | None = None
    token_limit: int | None = None
    time_limit: float | None = None
    #: the tokens one sample may pay for (all its roles): past it, that sample's error
    sample_token_limit: int | None = None
    #: the marker pairs around reasoning in a reply's text (``None``: ``<think>…</think>``)
    reasoning_tags: list[list[str]] | None = None
    #: single calls go through the provider's Batch API (half price), polled every so often
    batch: bool = False
    batch_poll: float = 30.0

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Refuse settings that would hang, finish empty or send garbage (one-line errors)."""
        check_number("--max-connections", self.max_connections, minimum=1, maximum=100_000,
                     integer=True, optional=False)
        check_number("--epochs", self.epochs, minimum=1, maximum=100_000, integer=True,
                     optional=False)
        check_number("--timeout", self.timeout, above=0, optional=False)
        check_number("--sample-timeout", self.sample_timeout, above=0)
        check_number("--max-retries", self.max_retries, minimum=0, maximum=1000, integer=True,
                     optional=False)
        check_number("retry_initial", self.retry_initial, minimum=0, optional=False)
        check_number("--limit", self.limit, minimum=1, integer=True)
        check_number("--seed", self.seed, integer=True)
        check_number("--max-reply-bytes", self.max_reply_bytes, minimum=1, integer=True,
                     optional=False)
        check_number("--rpm", self.rpm, above=0)
        check_number("--max-error-rate", self.max_error_rate, minimum=0, maximum=1, optional=False)
        if self.executor not in EXECUTORS:
            raise ConfigError(f"--executor {self.executor!r} is not one of: {', '.join(EXECUTORS)}")
        check_number("--workers", self.workers, minimum=1, maximum=10_000, integer=True)
        check_number("--cost-limit", self.cost_limit, minimum=0)
        check_number("--token-limit", self.token_limit, minimum=1, integer=True)
        check_number("--time-limit", self.time_limit, above=0)
        check_number("--sample-token-limit", self.sample_token_limit, minimum=1, integer=True)
        check_number("--batch-poll", self.batch_poll, above=0, optional=False)
        if self.reasoning_tags is not None and not all(
                isinstance(t, (list, tuple)) and len(t) == 2 and all(
                    isinstance(m, str) and m for m in t) for t in self.reasoning_tags):
            raise ConfigError("--reasoning-tags takes two non-empty markers, e.g. "
                              "--reasoning-tags '<think>' '</think>'")
        if self.batch and (self.executor == "ray" or not self.cache):
            raise ConfigError("--batch runs in this process through the response cache; "
                              "leave out --executor ray and --no-cache")
        effort = self.params.get("reasoning_effort")
        if effort is not None and effort not in ("minimal", "low", "medium", "high"):
            raise ConfigError(f"--reasoning-effort {effort!r}: give low, medium or high")
        check_number("--reasoning-tokens", self.params.get("reasoning_tokens"), minimum=1,
                     integer=True)
        if self.executor != "ray" and (self.workers is not None or self.ray_address):
            raise ConfigError("--workers and --ray-address are for --executor ray; add it, or "
                              "leave them out to run in this process")
        if not isinstance(self.params, dict):
            raise ConfigError(f"params must be a dict, got {type(self.params).__name__}")
        check_number("--temperature", self.params.get("temperature"), minimum=0)
        check_json_finite("--param", self.params)
        check_number("--param max_tokens", self.params.get("max_tokens"), minimum=1, integer=True)
        check_number("--param top_p", self.params.get("top_p"), minimum=0, maximum=1)
        if self.sample_ids is not None and not all(isinstance(i, str) for i in self.sample_ids):
            raise ConfigError("--sample-ids must be a list of strings")
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError("--model must name a model, e.g. 'local' or 'openai/<model>'")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as stored: no credentials. ``base_url`` keeps scheme, host and
        path (``base_url_has_secrets`` says it had more); ``redacted`` lists the other fields
        redaction changed (``task_options.judge_base_url``, ``params.x``), to give on resume."""
        changed: list[str] = []
        secrets = content_secrets()
        d = {k: v if k == "base_url" else redact_tree(v, k, path=k, changed=changed,
                                                      secrets=secrets)
             for k, v in asdict(self).items()}
        d["base_url"] = redact_url(self.base_url)
        d["ray_address"] = redact_url(self.ray_address)
        if self.endpoints:
            d["endpoints"] = [redact_url(u) for u in self.endpoints]
        if d["base_url"] != self.base_url:
            d["base_url_has_secrets"] = True
        if changed:
            d["redacted"] = sorted(set(changed))
        return d

    def run_params(self) -> dict[str, Any]:
        """The run's generation parameters as a task gets them (``--param``, and ``--seed``
        unless a ``seed`` param is given): for its solve and its judge alike."""
        params = dict(self.params)
        if self.seed is not None:
            params.setdefault("seed", self.seed)
        return params

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSpec:
        """Inverse of :meth:`to_dict` (unknown keys from newer versions are ignored; a
        spec stored before schema 4 names its task ``benchmark``)."""
        known = {k: v for k, v in current_spec(d).items() if k in cls.__dataclass_fields__}
        return cls(**known)


def option_flag(path: str) -> str:
    """How the user gives the stored spec field at ``path`` again: ``-T name=...`` for a
    task option, ``--model``/``--param name=...`` for the others."""
    head, _, rest = path.partition(".")
    name = rest.split(".")[0].split("[")[0]
    if head == "task_options" and name:
        return f"-T {name}=..."
    if head == "params" and name:
        return f"--param {name}=..."
    return "--" + head.split("[")[0].replace("_", "-")


def credentials_needed(run_id: str, paths: list[str]) -> ConfigError:
    """The one-line error for a resume that lacks the credentials a run's spec held."""
    flags = sorted({option_flag(p) for p in paths})
    fixed = [f for f in flags if not f.startswith("-T ")]
    if fixed:  # --model and --param cannot change on resume
        return ConfigError(
            f"run {run_id} was started with credentials in {', '.join(fixed)}, which are "
            "never stored and cannot be given again on resume; start a new run")
    return ConfigError(
        f"run {run_id} was started with credentials in {', '.join(flags)}, which are never "
        f"stored; resume with {' '.join(flags)} giving the full value again")

"""What a model's calls cost, in USD: a ``--pricing`` file's price, else genai-prices' (the
provider found from the endpoint's URL), else nothing for a model run here (``local``, a
server on this machine or a private network), else unknown: ``None``, never $0."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from assay.core.types import Usage
from assay.core.yamlsafe import load_yaml, read_yaml_text
from assay.errors import ConfigError

#: the share of the price a batch pays where a pricing file gives no batch price (OpenAI's,
#: Anthropic's and Google's batch APIs are half price)
BATCH_SHARE = 0.5
_FIELDS = ("input", "output", "cached_input", "batch_input", "batch_output")


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens (``cached_input``: cached prompt tokens; ``None``: as input)."""

    input: float
    output: float
    cached_input: float | None = None
    batch_input: float | None = None
    batch_output: float | None = None

    def cost(self, usage: Usage, batch: bool = False) -> float:
        cached = usage.cached_input_tokens or 0
        rate_in, rate_out = ((self.batch_input, self.batch_output) if batch
                             else (self.input, self.output))
        share = BATCH_SHARE if batch else 1.0
        rate_in = self.input * share if rate_in is None else rate_in
        rate_out = self.output * share if rate_out is None else rate_out
        rate_cached = (rate_in if self.cached_input is None
                       else self.cached_input * (share if batch else 1.0))
        return ((usage.input_tokens - cached) * rate_in + cached * rate_cached
                + usage.output_tokens * rate_out) / 1e6


def load_pricing(path: str | Path | None) -> dict[str, Price]:
    """A ``--pricing`` YAML file: ``{model as given to --model: {input, output, cached_input,
    batch_input, batch_output}}`` in USD per million tokens; one line for anything else."""
    if not path:
        return {}
    data = load_yaml(read_yaml_text(Path(path), "--pricing file"), path)
    if not isinstance(data, dict):
        raise ConfigError(f"--pricing {path}: expected a mapping of model -> prices, e.g. "
                          "'openai/gpt-4o-mini: {input: 0.15, output: 0.6}'")
    out = {}
    for model, fields in data.items():
        if not isinstance(fields, dict) or not {"input", "output"} <= set(fields):
            raise ConfigError(f"--pricing {path}: {model} needs 'input' and 'output' (USD per "
                              "million tokens)")
        unknown = set(fields) - set(_FIELDS)
        bad = [k for k, v in fields.items() if isinstance(v, bool)
               or not isinstance(v, (int, float)) or v < 0]
        if unknown or bad:
            raise ConfigError(f"--pricing {path}: {model}: "
                              + (f"unknown field {sorted(unknown)[0]!r} (give {', '.join(_FIELDS)})"
                                 if unknown else f"{bad[0]} must be a number >= 0"))
        out[str(model)] = Price(**{k: float(v) for k, v in fields.items()})
    return out


def priced_model(model: Any) -> Any:
    """The model whose calls are paid for, inside the wrappers the engine calls through (a
    subject, an agent driving a model, a pool of endpoints of one model)."""
    for _ in range(8):
        if callable(getattr(model, "price_ref", None)):
            break
        inner = getattr(model, "inner", None) or getattr(model, "model", None) or (
            getattr(model, "models", None) or [None])[0]
        if inner is None or isinstance(inner, str):
            break
        model = inner
    return model


class Pricer:
    """One model's price, found once: ``cost(usage)`` in USD, ``None`` when unknown;
    ``source`` says where it came from (``file``, ``genai-prices``, ``free``, ``unknown``).
    A provider's model says how it is priced (``price_ref()``: ``None`` where it runs here,
    else the name and URL to look up); one that does not is priced only by the file."""

    def __init__(self, model: Any, prices: dict[str, Price] | None = None):
        model = priced_model(model)
        self.model = str(getattr(model, "model_id", "") or "")
        self._price = (prices or {}).get(self.model)
        ref = model.price_ref() if callable(getattr(model, "price_ref", None)) else ()
        self._library: tuple[str, str] | None = ref or None
        if self._price is not None:
            self.source = "file"
        elif ref is None:
            self.source = "free"
        elif ref and self._calc(Usage(1, 1), False) is not None:
            self.source = "genai-prices"
        else:
            self.source = "unknown"

    @property
    def known(self) -> bool:
        return self.source != "unknown"

    def cost(self, usage: Usage, batch: bool = False) -> float | None:
        if self._price is not None:
            return self._price.cost(usage, batch)
        if self.source == "free":
            return 0.0
        return self._calc(usage, batch) if self.source == "genai-prices" else None

    def _calc(self, usage: Usage, batch: bool) -> float | None:
        import genai_prices  # startup (0.2 s)

        model, url = self._library  # type: ignore[misc]
        try:
            price = genai_prices.calc_price(
                genai_prices.Usage(input_tokens=usage.input_tokens,
                                   cache_read_tokens=usage.cached_input_tokens or None,
                                   output_tokens=usage.output_tokens),
                model_ref=model, provider_api_url=url,
                price_context={"processing": "batch"} if batch else None)
        except LookupError:
            return None
        return float(price.total_price)


def runs_here(url: str) -> bool:
    """An endpoint on this machine or a private network: self-hosted, free."""
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local

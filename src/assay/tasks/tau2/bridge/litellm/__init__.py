"""The part of litellm's surface that τ²-bench's ``tau2.utils.llm_utils`` imports, answered by
assay (not litellm; no litellm code is here).

In a τ²-bench worker this folder comes first on ``sys.path``, so the official code runs as
shipped: each ``completion`` it makes (the agent's, the user simulator's, an NL assertion's)
becomes a question to the run (:func:`assay.core.workers.ask`), which the τ²-bench task
answers with that role's model, cached, retried and counted like any assay model call.
"""

from litellm.main import ModelResponse, Usage, completion, completion_cost

__all__ = ["ModelResponse", "Usage", "completion", "completion_cost", "disable_cache",
           "enable_cache"]

suppress_debug_info = True
drop_params = True
cache = None
success_callback: list = []
failure_callback: list = []


def enable_cache(*_args, **_kwargs) -> None:
    """assay caches every model call itself; litellm's cache is never used."""


def disable_cache(*_args, **_kwargs) -> None:
    """assay caches every model call itself; litellm's cache is never used."""

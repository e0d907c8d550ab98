"""litellm's ``Cache``: refused (assay caches every model call itself)."""


class Cache:
    def __init__(self, *_args, **_kwargs) -> None:
        raise RuntimeError("τ²-bench's litellm cache is not used under assay (assay caches every "
                           "model call itself); unset LLM_CACHE_ENABLED")

"""The Hugging Face Hub source: its settings read at call time, failures classified, and what
the data cache keeps from it, each recorded: :func:`snapshot`, :func:`hub_file`,
:func:`keep_split`."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from assay.core.atomic import atomic_open
from assay.data.cache import data_root, lookup, record, tree_files
from assay.errors import DatasetError


def truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in ("1", "ON", "YES", "TRUE")


def hub_id(dataset_id: str, what: str) -> str:
    """``dataset_id`` when it is a Hub dataset id naming nothing on this disk (``load_dataset``
    would read a local path given as an id); else one DatasetError line."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id  # heavy

    try:
        validate_repo_id(dataset_id)
    except (HFValidationError, TypeError) as e:
        raise DatasetError(f"{what}: {str(dataset_id)[:200]!r} is not a Hugging Face dataset id "
                           f"(org/name): {str(e).splitlines()[0][:120]}") from None
    if Path(dataset_id).expanduser().exists():
        raise DatasetError(f"{what}: {dataset_id!r} names a local file or folder, which a "
                           "dataset id never reads; name local data as a file")
    return dataset_id


def hub_offline() -> bool:
    if truthy(os.environ.get("HF_HUB_OFFLINE")):
        return True
    try:
        from huggingface_hub import constants  # heavy
    except ImportError:  # pragma: no cover - huggingface_hub is a dependency
        return True
    return bool(constants.HF_HUB_OFFLINE)


def hub_endpoint() -> str | None:
    return (os.environ.get("HF_ENDPOINT") or "").rstrip("/") or None


def is_connection_error(exc: BaseException) -> bool:
    cur: BaseException | None = exc
    for _ in range(10):
        if cur is None:
            return False
        if isinstance(cur, (ConnectionError, TimeoutError)):
            return True
        names = {c.__name__ for c in type(cur).__mro__}
        if names & {"ConnectError", "ConnectTimeout", "TimeoutException", "NetworkError",
                    "OfflineModeIsEnabled", "LocalEntryNotFoundError", "ProxyError"}:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def http_status(exc: BaseException) -> int | None:
    cur: BaseException | None = exc
    for _ in range(10):
        if cur is None:
            return None
        status = getattr(getattr(cur, "response", None), "status_code", None)
        if isinstance(status, int):
            return status
        cur = cur.__cause__ or cur.__context__
    return None


def hub_failure(exc: BaseException) -> tuple[str, int | None]:
    """The kind of a Hub call's failure and its status, from class names (callers need not
    import huggingface_hub's errors)."""
    names = {c.__name__ for c in type(exc).__mro__}
    status = http_status(exc)
    if "OfflineModeIsEnabled" in names:
        return "offline", status
    if "GatedRepoError" in names or status == 403:
        return "gated", status
    if "RepositoryNotFoundError" in names or status == 404:
        return "not_found", status
    if "RevisionNotFoundError" in names:
        return "no_revision", status
    if status is None and is_connection_error(exc):
        # the client wraps an HTTP answer in LocalEntryNotFoundError too: only a failure
        # with no answer at all is "cannot reach the Hub"
        return "connection", status
    if status == 401:
        return "refused", status
    return ("http" if status is not None else "other"), status


def cache_dir() -> Path:
    return data_root() / "hf"


def _has_implicit_token() -> bool:
    try:
        from huggingface_hub import get_token  # heavy

        return bool(get_token())
    except Exception:  # only used to word a message
        return False


def snapshot(repo_id: str, *, token: str | None = None, cache: Path | None = None,
             label: str | None = None, local_flag: str = "--data-dir") -> Path:
    """Snapshot the Hub dataset into the cache (recorded; offline, only a cached copy); a
    failure is one DatasetError line naming ``label`` and ``local_flag``."""
    from huggingface_hub import snapshot_download  # heavy

    label = label or repo_id
    token = token or os.environ.get("HF_TOKEN") or None
    cache = Path(cache) if cache is not None else cache_dir()
    offline = hub_offline()
    page = f"https://huggingface.co/datasets/{repo_id}"
    offline_msg = (
        f"cannot reach the Hugging Face Hub to download {label} (offline?); download it "
        f"elsewhere with huggingface-cli download {repo_id} --repo-type dataset --local-dir "
        f"DIR (hf download in newer huggingface_hub) and pass {local_flag} DIR"
        + (" (HF_HUB_OFFLINE=1 is set, so only a cached copy could be used)" if offline else "")
    )
    try:
        cache.mkdir(parents=True, exist_ok=True)
        path = Path(snapshot_download(repo_id=repo_id, repo_type="dataset", token=token,
                                      cache_dir=str(cache), local_files_only=offline,
                                      endpoint=hub_endpoint()))
    except Exception as e:
        kind, status = hub_failure(e)
        if kind in ("gated", "refused"):
            no_token = "" if (token or _has_implicit_token()) else "no HF_TOKEN is set; "
            raise DatasetError(f"{label} is gated: {no_token}request access at {page}, then "
                               f"set HF_TOKEN (or pass {local_flag} to a local copy)") from e
        if kind == "not_found":
            raise DatasetError(f"dataset {repo_id} was not found on the Hugging Face Hub; "
                               f"check the name or pass {local_flag} to a local copy") from e
        if kind in ("connection", "offline"):
            raise DatasetError(offline_msg) from e
        why = f"HTTP {status}" if status is not None else type(e).__name__
        raise DatasetError(f"could not download {repo_id} from the Hugging Face Hub ({why}); try "
                           f"again later or pass {local_flag} to a local copy") from e
    if lookup("hub", repo_id, path.name) is None:  # once per revision: hashing reads it all
        record("hub", repo_id, source="hf", origin=repo_id, version=path.name, path=path,
               files=tree_files(path))
    return path


def hub_file(repo_id: str, filename: str, revision: str | None, token: str | None) -> Path:
    """One file of a Hub dataset, recorded; the client's exception is raised as it is."""
    from huggingface_hub import hf_hub_download  # heavy

    cache_dir().mkdir(parents=True, exist_ok=True)
    path = Path(hf_hub_download(repo_id, filename, repo_type="dataset", revision=revision,
                                cache_dir=str(cache_dir()), token=token,
                                endpoint=hub_endpoint()))
    commit = path.parents[len(Path(filename).parts) - 1].name  # .../snapshots/<commit>/...
    if lookup("hub", f"{repo_id}/{filename}", commit) is None:
        record("hub", f"{repo_id}/{filename}", source="hf", origin=repo_id, version=commit,
               path=path, files=[path])
    return path


def split_path(repo_id: str, revision: str, config: str | None, split: str) -> Path:
    def safe(part: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]", "_", part.replace("/", "__")).lstrip(".") or "_"

    return (data_root() / "hub" / safe(repo_id) / safe(revision)
            / safe(config or "default") / f"{safe(split)}.jsonl")


def kept_split(repo_id: str, revision: str, config: str | None, split: str) -> Path | None:
    item = lookup("hub", f"{repo_id}[{config or 'default'}/{split}]", revision)
    return Path(item.path) if item is not None else None


def keep_split(repo_id: str, revision: str, config: str | None, split: str,
               rows: Iterable[dict[str, Any]]) -> Path:
    """Write ``rows`` as the split's JSONL file and record it; no row is a DatasetError."""
    out, n = split_path(repo_id, revision, config, split), 0
    with atomic_open(out, "w") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, default=_json_default) + "\n")
            n += 1
        if n == 0:
            raise DatasetError(f"dataset {repo_id}: split {split!r} has no rows; choose "
                               "another split or dataset")
    record("hub", f"{repo_id}[{config or 'default'}/{split}]", source="hf", origin=repo_id,
           version=revision, path=out, files=[out])
    return out


def _json_default(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(bytes(v)).decode("ascii")
    return str(v)


def _in_local_cache(dataset_id: str) -> bool:
    from huggingface_hub import constants  # heavy

    folders = [Path(constants.HF_HUB_CACHE) / f"datasets--{dataset_id.replace('/', '--')}"]
    try:
        import datasets  # optional: assay[hf]

        folders.append(Path(datasets.config.HF_DATASETS_CACHE) / dataset_id.replace("/", "___"))
    except (ImportError, AttributeError):
        pass
    return any(f.exists() for f in folders)


def _hub_unreachable(timeout: float = 3.0) -> str | None:
    """Why a quick TCP connect to the Hub fails, or ``None`` (not tried behind a proxy)."""
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    parts = urlsplit(hub_endpoint() or "https://huggingface.co")
    host = parts.hostname or "huggingface.co"
    port = parts.port or (80 if parts.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        return f"cannot connect to {host}: {e.strerror or type(e).__name__}"
    return None


def load_split(dataset_id: str, *, split: str | None = None, config: str | None = None,
               hint: str = "") -> tuple[list[dict[str, Any]], str, str | None]:
    """One split through ``datasets``: rows, the split used (default ``test``, else
    ``train``, else the first) and fingerprint; an unreachable Hub fails in seconds."""
    hub_id(dataset_id, "the Hugging Face dataset")
    try:
        import datasets  # optional: assay[hf]
    except ImportError as e:
        raise DatasetError(f"loading {dataset_id} needs the 'datasets' package: "
                           "pip install 'assay[hf]'") from e
    offline = any(truthy(os.environ.get(v)) for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))
    if not offline and not _in_local_cache(dataset_id):
        down = _hub_unreachable()
        if down:
            raise DatasetError(f"{dataset_id} unreachable (offline: {down}){hint}")
    try:
        loaded = datasets.load_dataset(dataset_id, name=config, split=split,
                                       token=os.environ.get("HF_TOKEN") or None)
    except Exception as e:  # datasets raises many types; all mean "could not load"
        lines = str(e).strip().splitlines()
        why = "offline (HF_HUB_OFFLINE set) and not cached" if offline else (
            lines[0].strip()[:160] if lines and lines[0].strip() else type(e).__name__)
        raise DatasetError(f"{dataset_id} unreachable ({why}){hint}") from e
    used = split
    if split is None:
        names = list(loaded.keys()) if hasattr(loaded, "keys") else []
        used = next((s for s in ("test", "train") if s in names), names[0] if names else None)
        if used is None:
            raise DatasetError(f"{dataset_id} has no splits")
        loaded = loaded[used]
    return [dict(r) for r in loaded], used, getattr(loaded, "_fingerprint", None)

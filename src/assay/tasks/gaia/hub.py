"""Downloading ``gaia-benchmark/GAIA`` from the Hugging Face Hub.

``huggingface_hub.snapshot_download`` fetches the repository (either layout, see
:mod:`assay.tasks.gaia.layouts`) into ``$ASSAY_HOME/data/gaia``. GAIA is gated,
so that needs ``HF_TOKEN`` (or a stored login) and accepted conditions on the
dataset page. Every failure is a one-line :class:`~assay.errors.DatasetError` that
says what to do; the token is never part of a message.
"""

from __future__ import annotations

import os
from pathlib import Path

from assay.data.hf import hub_endpoint, hub_offline, is_connection_error
from assay.errors import DatasetError
from assay.store.sqlite import workspace_dir
from assay.tasks.gaia.layouts import GAIA_REPO


def cache_root() -> Path:
    """Where downloaded GAIA snapshots live: ``$ASSAY_HOME/data/gaia``."""
    return workspace_dir() / "data" / "gaia"


def _has_implicit_token() -> bool:
    try:
        from huggingface_hub import get_token

        return bool(get_token())
    except Exception:  # only used to word a message
        return False


def download(dataset_name: str = GAIA_REPO, token: str | None = None,
             cache_dir: Path | None = None) -> Path:
    """Snapshot ``dataset_name`` from the Hub (cached); returns the snapshot folder.

    The token is ``token`` or ``HF_TOKEN`` (else huggingface_hub's stored login). With
    ``HF_HUB_OFFLINE=1`` only a cached snapshot is used. Failures become one-line
    :class:`DatasetError`; the token is never part of a message.
    """
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.utils import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError
    except ImportError as e:  # pragma: no cover - huggingface_hub is a dependency
        raise DatasetError("downloading GAIA needs huggingface_hub: pip install huggingface_hub"
                           ) from e
    token = token or os.environ.get("HF_TOKEN") or None
    cache = Path(cache_dir) if cache_dir is not None else cache_root()
    offline = hub_offline()
    endpoint = hub_endpoint()
    page = f"https://huggingface.co/datasets/{dataset_name}"
    offline_msg = (
        "cannot reach the Hugging Face Hub to download GAIA (offline?); download it elsewhere "
        f"with huggingface-cli download {dataset_name} --repo-type dataset --local-dir DIR "
        "(hf download in newer huggingface_hub) and pass --data-dir DIR"
        + (" (HF_HUB_OFFLINE=1 is set, so only a cached copy could be used)" if offline else "")
    )
    try:
        cache.mkdir(parents=True, exist_ok=True)
        path = snapshot_download(repo_id=dataset_name, repo_type="dataset", token=token,
                                 cache_dir=str(cache), local_files_only=offline,
                                 endpoint=endpoint)
    except HfHubHTTPError as e:
        status = getattr(getattr(e, "response", None), "status_code", None)
        if isinstance(e, GatedRepoError) or status in (401, 403):
            no_token = "" if (token or _has_implicit_token()) else "no HF_TOKEN is set; "
            raise DatasetError(
                f"GAIA is gated: {no_token}request access at {page}, then set HF_TOKEN "
                "(or pass --data-dir to a local copy)"
            ) from e
        if isinstance(e, RepositoryNotFoundError) or status == 404:
            raise DatasetError(f"dataset {dataset_name} was not found on the Hugging Face Hub; "
                               "check the name or pass --data-dir to a local copy") from e
        if is_connection_error(e):
            raise DatasetError(offline_msg) from e
        raise DatasetError(f"could not download {dataset_name} from the Hugging Face Hub "
                           f"(HTTP {status}); try again later or pass --data-dir to a local "
                           "copy") from e
    except Exception as e:
        if is_connection_error(e):
            raise DatasetError(offline_msg) from e
        raise DatasetError(f"could not download {dataset_name} from the Hugging Face Hub "
                           f"({type(e).__name__}); pass --data-dir to a local copy") from e
    return Path(path)

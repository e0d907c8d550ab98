// assay view: the live view of a running run. Polls /api/run/<id>/progress every 2 s
// while the run is running and stops once it is not. Our own code only; every value
// from the server is put on the page as text (textContent), never as HTML.
"use strict";
(() => {
  const live = document.getElementById("live");
  if (!live || live.dataset.status !== "running") return;
  const url = live.dataset.progressUrl;
  const PERIOD_MS = 2000;

  function setText(id, value) {
    const el = document.getElementById(id);
    if (el) el.textContent = value === null || value === undefined ? "" : String(value);
  }

  function verdictSpan(verdict) {
    const span = document.createElement("span");
    const known = ["correct", "wrong", "error", "unscored"];
    span.className = "verdict v-" + (known.includes(verdict) ? verdict : "score");
    span.textContent = verdict;
    return span;
  }

  function showNewest(rows) {
    const list = document.getElementById("newest");
    if (!list) return;
    list.replaceChildren(...rows.map((r) => {
      const li = document.createElement("li");
      li.className = "newest-sample";
      li.dataset.sampleId = r.sample_id;
      const a = document.createElement("a");
      a.href = r.url;
      a.textContent = r.sample_id + (r.epoch ? " #" + r.epoch : "");
      li.append(a, " ", verdictSpan(r.verdict));
      const text = r.error || r.prediction;
      if (text) {
        const note = document.createElement("span");
        note.className = "muted";
        note.textContent = " " + String(text).slice(0, 120);
        li.append(note);
      }
      return li;
    }));
  }

  function show(info) {
    setText("live-status", info.status);
    setText("live-samples", info.samples);
    setText("live-planned", info.planned);
    setText("live-correct", info.correct);
    setText("live-scored", info.scored);
    setText("live-errors", info.errors);
    const status = document.querySelector("#run-status .status");
    if (status) {
      status.textContent = info.status;
      status.className = "status status-" + info.status;
    }
    showNewest(info.newest || []);
  }

  function stop(info) {
    live.dataset.status = info.status;
    live.dataset.polling = "stopped";
    setText("live-note", "the run is " + info.status + "; reload the page for its final metrics");
  }

  async function poll() {
    try {
      const res = await fetch(url, {cache: "no-store", headers: {Accept: "application/json"}});
      if (res.ok) {
        const info = await res.json();
        show(info);
        if (info.status !== "running") {
          stop(info);
          return;
        }
      }
    } catch (err) {
      setText("live-note", "the server did not answer; retrying");
    }
    setTimeout(poll, PERIOD_MS);
  }

  poll();
})();

// assay review page: keyboard-first scoring, saved through POST /review/api/review;
// export through POST /review/api/export (nothing that writes answers a GET).
// Our own code only; no external scripts. Every submission is committed on the
// server before this page says "saved".
"use strict";
(() => {
  const cfgEl = document.getElementById("review-config");
  if (!cfgEl) return;
  const cfg = JSON.parse(cfgEl.textContent);
  const form = document.getElementById("review-form");
  const dims = Array.from(document.querySelectorAll("fieldset.dim"));
  const saveStatus = document.getElementById("save-status");
  const comment = document.getElementById("comment");
  const help = document.getElementById("help");
  const helpToggle = document.getElementById("help-toggle");
  const filter = document.getElementById("status-filter");
  let active = 0;
  let edits = 0;        // bumped by every change; a save covers the edits made before it
  let savedEdits = 0;
  let inFlight = null;  // the save being sent, so saves go one after another

  const isDirty = () => edits !== savedEdits;

  function showState(state, text) {
    saveStatus.dataset.state = state;
    saveStatus.textContent = text;
  }

  function markDirty() {
    edits += 1;
    showState("dirty", "unsaved changes");
  }

  function setActive(i, focus) {
    if (!dims.length) return;
    active = Math.max(0, Math.min(dims.length - 1, i));
    dims.forEach((el, j) => el.classList.toggle("active", j === active));
    if (focus) dims[active].focus();
  }

  function scoreInputs(i) {
    return Array.from(dims[i].querySelectorAll("input[type=radio]"));
  }

  function setScore(i, value) {
    const input = scoreInputs(i).find((el) => Number(el.value) === value);
    if (!input) return;
    input.checked = true;
    markDirty();
  }

  function clearScore(i) {
    scoreInputs(i).forEach((el) => { el.checked = false; });
    markDirty();
  }

  function setStatus(status) {
    const input = document.getElementById(`st-${status}`);
    if (!input) return;
    input.checked = true;
    markDirty();
  }

  function collect() {
    const scores = {};
    dims.forEach((el, i) => {
      const checked = scoreInputs(i).find((input) => input.checked);
      scores[el.dataset.dim] = checked ? Number(checked.value) : null;
    });
    const status = form.querySelector('input[name="status"]:checked');
    return {
      problem_id: cfg.problem_id,
      reviewer: cfg.reviewer,
      scores,
      status: status ? status.value : "pending",
      comment: comment.value,
    };
  }

  function updateProgress(p) {
    if (!p) return;
    document.getElementById("progress").textContent = `${p.reviewed} / ${p.total} reviewed`;
    document.getElementById("progress-bar").value = p.reviewed;
    document.getElementById("progress-detail").textContent =
      `approved ${p.approved} · rejected ${p.rejected} · needs revision ${p.needs_revision}`;
  }

  function updateStrip(status) {
    const cell = document.querySelector(".strip a.current");
    if (cell) cell.className = `s-${status} current`;
  }

  function revealJudge(judge) {
    const panel = document.getElementById("judge-panel");
    if (!panel || !judge) return;
    const table = document.createElement("table");
    table.id = "judge-scores";
    const names = cfg.dimensions.concat(Object.keys(judge).filter((k) => !cfg.dimensions.includes(k)));
    for (const name of names) {
      const row = table.insertRow();
      const box = document.getElementById(`dim-${name}`);
      const legend = box && box.querySelector("legend");
      row.insertCell().textContent = legend ? legend.firstChild.textContent.trim() : name;
      const cell = row.insertCell();
      cell.className = "num";
      cell.textContent = name in judge ? String(judge[name]) : "–";
    }
    const title = document.createElement("h3");
    title.textContent = "Judge scores";
    panel.replaceChildren(title, table);
  }

  async function post(body) {
    const r = await fetch("/review/api/review", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
    let data = {};
    try { data = await r.json(); } catch (_) { /* not JSON */ }
    if (!r.ok || !data.ok) throw new Error(data.error || `HTTP ${r.status}`);
    return data;
  }

  async function submit() {
    while (inFlight) {
      try { await inFlight; } catch (_) { /* reported by its own caller */ }
    }
    const covered = edits;
    const body = collect();
    showState("saving", "saving…");
    inFlight = post(body);
    try {
      const data = await inFlight;
      savedEdits = covered;
      const rv = data.review;
      if (isDirty()) showState("dirty", "unsaved changes");
      else showState("saved", `saved · v${rv.version} · ${rv.updated_at_iso}`);
      try {
        updateProgress(data.progress);
        updateStrip(rv.status);
        if (data.judge) revealJudge(data.judge);
      } catch (err) {
        console.warn("saved, but the page could not be updated:", err);
      }
      return true;
    } catch (err) {
      showState("error", `not saved: ${err.message}`);
      return false;
    } finally {
      inFlight = null;
    }
  }

  async function go(url) {
    if (!url) return;
    if (isDirty() && !(await submit())) return;
    window.location.href = url;
  }

  async function submitNext() {
    if ((await submit()) && cfg.next_url) window.location.href = cfg.next_url;
  }

  // Export is a POST (it writes a file): the JSON comes back and is offered as a download.
  async function exportJson() {
    const exportStatus = document.getElementById("export-status");
    exportStatus.textContent = "exporting…";
    try {
      const r = await fetch("/review/api/export", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ download: true }),
        credentials: "same-origin",
      });
      const text = await r.text();
      if (!r.ok) {
        let msg = `HTTP ${r.status}`;
        try { msg = JSON.parse(text).error || msg; } catch (_) { /* not JSON */ }
        throw new Error(msg);
      }
      const path = r.headers.get("X-Assay-Export-Path") || "";
      const name = path.split(/[\\/]/).pop() || "verifications.json";
      const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
      const a = document.createElement("a");
      a.href = url;
      a.download = name;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      exportStatus.textContent = `exported to ${path}`;
    } catch (err) {
      exportStatus.textContent = `export failed: ${err.message}`;
    }
  }

  function toggleHelp(show) {
    const open = show === undefined ? help.hidden : show;
    help.hidden = !open;
    helpToggle.setAttribute("aria-expanded", String(open));
  }

  // -- wiring ------------------------------------------------------------------------------
  form.addEventListener("change", markDirty);
  comment.addEventListener("input", markDirty);
  form.addEventListener("submit", (e) => { e.preventDefault(); submit(); });
  document.getElementById("submit-next").addEventListener("click", submitNext);
  form.addEventListener("focusin", (e) => {
    const f = e.target.closest("fieldset.dim");
    if (f) setActive(Number(f.dataset.index), false);
  });
  form.querySelectorAll("button.clear").forEach((b) => {
    b.addEventListener("click", () => clearScore(Number(b.closest("fieldset.dim").dataset.index)));
  });
  document.querySelectorAll("a#prev, a#next, .strip a").forEach((a) => {
    a.addEventListener("click", (e) => {
      if (!isDirty()) return;
      e.preventDefault();
      go(a.href);
    });
  });
  filter.addEventListener("change", () => {
    go(`${cfg.filter_base}&status=${encodeURIComponent(filter.value)}`);
  });
  helpToggle.addEventListener("click", () => toggleHelp());
  document.getElementById("export").addEventListener("click", exportJson);
  window.addEventListener("beforeunload", (e) => {
    if (isDirty()) { e.preventDefault(); e.returnValue = ""; }
  });

  document.addEventListener("keydown", (e) => {
    const t = e.target;
    const typing = t && (t.tagName === "TEXTAREA" || t.tagName === "SELECT" ||
      (t.tagName === "INPUT" && !["radio", "checkbox", "button", "submit"].includes(t.type)));
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
      e.preventDefault();
      submit();
      return;
    }
    if (typing) {
      if (e.key === "Escape") { t.blur(); setActive(active, true); }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    let key = e.key;
    if (key.length === 1 && !e.shiftKey) key = key.toLowerCase();
    if (key.length === 1 && key >= "1" && key <= "5") {
      e.preventDefault();
      setScore(active, Number(key));
      if (active < dims.length - 1) setActive(active + 1, true);
      return;
    }
    const onBody = !document.activeElement || document.activeElement === document.body;
    switch (key) {
      case "Tab":
        if (!onBody) return;  // native Tab moves between the dimension boxes
        setActive(active, true);
        break;
      case "0": case "Delete": case "Backspace": clearScore(active); break;
      case "ArrowDown": setActive(active + 1, true); break;
      case "ArrowUp": setActive(active - 1, true); break;
      case "a": setStatus("approved"); break;
      case "r": setStatus("rejected"); break;
      case "n": setStatus("needs_revision"); break;
      case "s": submit(); break;
      case "S": submitNext(); break;
      case "j": case "ArrowRight": go(cfg.next_url); break;
      case "k": case "ArrowLeft": go(cfg.prev_url); break;
      case "c": comment.focus(); break;
      case "?": toggleHelp(); break;
      case "Escape": toggleHelp(false); break;
      default: return;
    }
    e.preventDefault();
  });

  // start on the first dimension without a score
  const firstEmpty = dims.findIndex((_, i) => !scoreInputs(i).some((el) => el.checked));
  setActive(firstEmpty < 0 ? 0 : firstEmpty, true);
  document.body.dataset.ready = "1";  // keys work from here on (the tests wait for it)
})();

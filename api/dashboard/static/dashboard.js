// crowdqa dashboard: live progress of a queued or running job, and of a job's pre-annotations (the only
// script; no inline code).
"use strict";
(function () {
  const box = document.getElementById("progress");
  if (!box) return;
  const url = box.dataset.poll;
  const svg = document.getElementById("ll-curve");
  const seen = [];
  const text = (id, value) => { const el = document.getElementById(id); if (el) el.textContent = value; };

  function draw() {
    if (!svg || seen.length === 0) return;
    const x0 = +svg.dataset.x0, x1 = +svg.dataset.x1, y0 = +svg.dataset.y0, y1 = +svg.dataset.y1;
    let lo = Math.min(...seen.map((p) => p[1])), hi = Math.max(...seen.map((p) => p[1]));
    if (hi === lo) { lo -= 1; hi += 1; }
    const last = Math.max(seen[seen.length - 1][0], 2);
    const first = seen[0][0];
    const pts = seen.map(([i, v]) => {
      const x = x0 + ((i - first) / Math.max(last - first, 1)) * (x1 - x0);
      const y = y0 + ((v - lo) / (hi - lo)) * (y1 - y0);
      return x.toFixed(1) + "," + y.toFixed(1);
    });
    const line = svg.querySelector("polyline");
    if (line) line.setAttribute("points", pts.join(" "));
    svg.querySelectorAll("text.tick, circle.dot").forEach((t) => t.remove());
  }

  async function poll() {
    let state;
    try {
      const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!response.ok) { text("p-status", "unavailable (" + response.status + ")"); return; }
      state = await response.json();
    } catch (err) {
      setTimeout(poll, 2000);
      return;
    }
    text("p-status", state.status);
    text("p-stage", state.stage || "-");
    text("p-iteration", state.iteration === null || state.iteration === undefined ? "-" : String(state.iteration));
    text("p-ll", typeof state.log_likelihood === "number" ? state.log_likelihood.toFixed(4) : "-");
    if (typeof state.iteration === "number" && typeof state.log_likelihood === "number") {
      if (!seen.length || seen[seen.length - 1][0] !== state.iteration) seen.push([state.iteration, state.log_likelihood]);
      draw();
    }
    if (state.status === "finished" || state.status === "failed") {
      window.location.reload();
      return;
    }
    setTimeout(poll, 700);
  }
  poll();
})();

(function () {
  // A pre-annotation queued or running: its status cell follows it, and the page reloads when it has ended (its
  // downloads appear).
  const cells = document.querySelectorAll("[data-poll-prediction]");
  cells.forEach((cell) => {
    async function poll() {
      let state;
      try {
        const response = await fetch(cell.dataset.pollPrediction, { credentials: "same-origin", headers: { Accept: "application/json" } });
        if (!response.ok) { cell.textContent = "unavailable (" + response.status + ")"; return; }
        state = await response.json();
      } catch (err) {
        setTimeout(poll, 2000);
        return;
      }
      cell.textContent = state.status + (state.stage ? " (" + state.stage + ")" : "");
      if (state.status === "finished" || state.status === "failed") {
        window.location.reload();
        return;
      }
      setTimeout(poll, 700);
    }
    poll();
  });
})();

// A run page's test predictions: rendered a page of rows at a time from the JSON embedded in the page,
// filtered by correctness or error kind and searched by example id. No server, no library.
(function () {
  "use strict";
  // large prediction lists come in a script file beside the page (window.medibioExamples), small ones inline
  const data = window.medibioExamples || JSON.parse(document.getElementById("examples").textContent);
  // a BLURB row names its text by its position in the test set, whose texts all pages of the dataset share
  if (window.medibioTexts) for (const row of data.rows) if (row.t === undefined) row.t = window.medibioTexts[row.i];
  const $ = (id) => document.getElementById(id);
  const state = { seed: data.seeds[0], filter: "all", query: "", page: 0 };
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  const cls = (kind) => "k-" + kind.replace(/ /g, "-");
  const spanMode = data.mode === "ner" || data.mode === "scierc";

  for (const seed of data.seeds) $("seed").add(new Option("seed " + seed, seed));
  if (data.seeds.length < 2) $("seed").parentElement.hidden = true;
  for (const kind of data.kinds) {
    if (kind !== "correct") $("filter").add(new Option("with a span " + kind, "kind:" + kind));
  }
  if (spanMode) {
    $("legend").innerHTML = data.kinds.map((k) => `<mark class="${cls(k)}">${esc(k)}</mark>`).join("");
  }
  const heads = { ner: ["id", "sentence: gold and predicted entities"], scierc: ["document", "entities, relations, coreference"],
    label: ["id", "text", "gold", "predicted"], labels: ["id", "text", "gold", "predicted"], score: ["id", "text", "gold", "predicted"] };
  $("examples-head").innerHTML = "<tr>" + heads[data.mode].map((h) => `<th>${esc(h)}</th>`).join("") + "</tr>";

  function marked(words, spans, side) {
    // words with this side's spans wrapped in <mark>, coloured by error kind
    const starts = new Map();
    for (const s of spans) if (s[3] === side) starts.set(s[0], s);
    const out = [];
    for (let i = 0; i < words.length; i++) {
      const s = starts.get(i);
      if (s) {
        const text = words.slice(s[0], s[1] + 1).map(esc).join(" ");
        const type = s[2] === "ENT" ? "" : `<sub>${esc(s[2])}</sub>`;
        out.push(`<mark class="${cls(s[4])}" title="${esc(side + ": " + s[4])}">${text}${type}</mark>`);
        i = s[1];
      } else out.push(esc(words[i]));
    }
    return out.join(" ");
  }
  function lines(words, spans) {
    return `<div class="line"><span class="side">gold</span>${marked(words, spans, "gold")}</div>` +
      `<div class="line"><span class="side">predicted</span>${marked(words, spans, "predicted")}</div>`;
  }
  function words(row, a, b) { return row.t.slice(a, b + 1).map(esc).join(" "); }
  function scierc(row, seed) {
    const rels = (row.r[seed] || []).filter((r) => r[5] === "predicted" || r[6] === "missed").map((r) =>
      `<li class="${cls(r[6])}">${words(row, r[0], r[1])} —${esc(r[4])}→ ${words(row, r[2], r[3])} <small>(${esc(r[6])})</small></li>`);
    const cluster = (c) => "{" + c.map((m) => words(row, m[0], m[1])).join(" | ") + "}";
    const coref = row.c[seed] || {};
    const errs = Object.entries(coref).filter(([, v]) => v.length).map(([k, v]) =>
      `<li class="${cls(k)}">${esc(k)}: ${v.map((x) => Array.isArray(x[0]) ? words(row, x[0][0], x[0][1]) + " ~ " + words(row, x[1][0], x[1][1]) : words(row, x[0], x[1])).join("; ")}</li>`);
    return `<div class="doc">${lines(row.t, row.s[seed] || [])}</div>` +
      `<details><summary>relations (${rels.length} predicted or missed)</summary><ul class="relations">${rels.join("")}</ul></details>` +
      `<details><summary>coreference: ${row.gc.length} gold clusters, ${(row.pc[seed] || []).length} predicted</summary>` +
      `<div>gold: ${row.gc.map(cluster).join(" ")}</div><div>predicted: ${(row.pc[seed] || []).map(cluster).join(" ")}</div>` +
      `<ul class="relations">${errs.join("")}</ul></details>`;
  }
  function value(v) { return Array.isArray(v) ? v.map(esc).join(", ") || "(none)" : typeof v === "number" ? v.toFixed(2) : esc(v); }
  function cells(row, seed) {
    if (data.mode === "ner") return `<td class="text">${lines(row.t, row.s[seed])}</td>`;
    if (data.mode === "scierc") return `<td class="text">${scierc(row, seed)}</td>`;
    return `<td class="text"><div class="text">${row.t.map(esc).join("<hr>")}</div></td><td>${value(row.g)}</td><td>${value(row.p[seed])}</td>`;
  }
  function keep(row) {
    const seed = state.seed;
    if (!(seed in row.ok)) return false;
    if (state.query && !row.id.toLowerCase().includes(state.query)) return false;
    if (state.filter === "correct") return row.ok[seed];
    if (state.filter === "incorrect") return !row.ok[seed];
    if (state.filter.startsWith("kind:")) {
      const kind = state.filter.slice(5);
      return (row.s[seed] || []).some((s) => s[4] === kind && (s[3] === "predicted" || kind === "missed"));
    }
    return true;
  }
  function render() {
    const rows = data.rows.filter(keep);
    const pages = Math.max(1, Math.ceil(rows.length / data.pageSize));
    state.page = Math.min(state.page, pages - 1);
    const shown = rows.slice(state.page * data.pageSize, (state.page + 1) * data.pageSize);
    $("examples-body").innerHTML = shown.map((row) =>
      `<tr class="${row.ok[state.seed] ? "right" : "wrong"}" data-id="${esc(row.id)}"><td><code>${esc(row.id)}</code><br><small>${row.ok[state.seed] ? "correct" : "incorrect"}</small></td>${cells(row, state.seed)}</tr>`).join("");
    $("count").textContent = `${rows.length} of ${data.rows.length} examples`;
    $("page").textContent = `page ${state.page + 1} of ${pages}`;
    $("prev").disabled = state.page === 0;
    $("next").disabled = state.page >= pages - 1;
  }
  $("seed").addEventListener("change", (e) => { state.seed = e.target.value; state.page = 0; render(); });
  $("filter").addEventListener("change", (e) => { state.filter = e.target.value; state.page = 0; render(); });
  $("search").addEventListener("input", (e) => { state.query = e.target.value.trim().toLowerCase(); state.page = 0; render(); });
  $("prev").addEventListener("click", () => { state.page -= 1; render(); });
  $("next").addEventListener("click", () => { state.page += 1; render(); });
  render();
})();

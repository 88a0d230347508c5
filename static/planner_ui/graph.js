// The plan as a graph: boxes and arrows, laid out left to right by dagre, coloured by status.
// Labels are canvas text, never HTML, so titles from people and models cannot inject markup.
//
//   const graph = PlanGraph.mount(container, {nodes: [{id, title, role, tools, status, critical}],
//                                             edges: [{source, target, critical}]}, {editable: false});
//   graph.setStatus(stepId, status); graph.update(data); graph.fit(); graph.destroy();
//   graph.criticalPath();  // the ids of the critical steps, first to last
//
// An edge runs from the dependency (source) to the step that waits for it (target).
// Clicking a step dispatches "plangraph:select" on the container with detail {stepId}.
// Needs window.cytoscape and the cytoscape-dagre extension loaded first.
(function () {
  "use strict";

  // Kept in step with .legend-* in graph.css.
  const COLORS = {
    pending: {bg: "#eef0f3", border: "#98a2b3", text: "#344054"},
    queued: {bg: "#e3ecff", border: "#5b8def", text: "#1d3a8a"},
    running: {bg: "#ffefc2", border: "#d98b06", text: "#5c3d00"},
    waiting: {bg: "#fde2f3", border: "#b0307a", text: "#5e1141"},
    succeeded: {bg: "#dff5e7", border: "#1f9d55", text: "#0f4d2a"},
    failed: {bg: "#fde4e4", border: "#d64545", text: "#7a1b1b"},
    skipped: {bg: "#f7f8fa", border: "#b4bac4", text: "#8a93a3"},
  };
  const SELECTED = "#3656d6";
  // The critical path (the most model calls one after another, see core/estimate.py): thick
  // violet arrows and a violet stripe down the left of each box. Kept in step with
  // .legend-critical in graph.css.
  const CRITICAL = "#7c3aed";
  const CRITICAL_STRIPE = "data:image/svg+xml;utf8," + encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" width="6" height="10"><rect width="6" height="10" fill="' + CRITICAL + '"/></svg>');

  // Every box is the same width, so the steps of one layer line up in one column; the height
  // follows the wrapped label. Cytoscape's own `height: label` is deprecated and warns.
  const NODE_WIDTH = 180;
  const PADDING_X = 12;
  const PADDING_Y = 9;
  const TEXT_WIDTH = NODE_WIDTH - 2 * PADDING_X;
  const FONT_SIZE = 12;
  const LINE_HEIGHT = 1.3;
  const FONT_FAMILY = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
  const MAX_TITLE_LINES = 3;
  const MAX_DETAIL_LINES = 2;

  const LAYOUT = {name: "dagre", rankDir: "LR", nodeSep: 20, rankSep: 64, edgeSep: 12, fit: false, animate: false};
  const FIT_PADDING = 24;
  // A small plan fitted to the box would be blown up to the maximum zoom: stop a bit above 1.
  const MAX_FIT_ZOOM = 1.25;
  const PULSE_MS = 900;
  // Past this many steps the container grows (see .plan-graph-large) so the fitted plan is not
  // drawn too small to read; labels smaller than MIN_FONT_PX on screen are left out until the
  // user zooms in, which keeps the overview a clean map of coloured boxes.
  const LARGE_PLAN = 20;
  const MIN_FONT_PX = 5;

  let measureContext = null;
  function textWidth(text, bold) {
    if (!measureContext) measureContext = document.createElement("canvas").getContext("2d");
    measureContext.font = (bold ? "bold " : "") + FONT_SIZE + "px " + FONT_FAMILY;
    return measureContext.measureText(text).width;
  }

  // Greedy word wrap, measured with the font the canvas draws with; a word too long for a line
  // is cut between characters, and text past maxLines ends in an ellipsis.
  function wrap(text, maxLines, bold) {
    const fits = (line) => textWidth(line, bold) <= TEXT_WIDTH;
    const lines = [];
    let line = "";
    const words = String(text).replace(/\s+/g, " ").trim().split(" ");
    for (let word of words) {
      if (!word) continue;
      const candidate = line ? line + " " + word : word;
      if (fits(candidate)) { line = candidate; continue; }
      if (line) { lines.push(line); line = ""; }
      while (!fits(word)) {
        let cut = word.length - 1;
        while (cut > 1 && !fits(word.slice(0, cut))) cut--;
        lines.push(word.slice(0, cut));
        word = word.slice(cut);
      }
      line = word;
    }
    if (line) lines.push(line);
    if (lines.length <= maxLines) return lines;
    const kept = lines.slice(0, maxLines);
    let last = kept[maxLines - 1];
    while (last && !fits(last + "…")) last = last.slice(0, -1);
    kept[maxLines - 1] = last.replace(/\s+$/, "") + "…";
    return kept;
  }

  function nodeData(step) {
    const tools = Array.isArray(step.tools) ? step.tools.filter(Boolean).map(String) : [];
    // Tools with irreversible effects carry their effect, e.g. "send_email (send)".
    const effects = step.effects || {};
    const named = tools.map((t) => (effects[t] ? t + " (" + effects[t] + ")" : t));
    const detail = String(step.role || "") + (named.length ? " · " + named.join(", ") : "");
    // The synthesizer's label is bold (see style()), so it is measured bold.
    const bold = step.role === "synthesizer";
    const lines = wrap(step.title || step.id, MAX_TITLE_LINES, bold).concat(detail ? wrap(detail, MAX_DETAIL_LINES, bold) : []);
    return {
      id: String(step.id),
      label: lines.join("\n"),
      height: Math.max(40, Math.ceil(2 * PADDING_Y + lines.length * FONT_SIZE * LINE_HEIGHT)),
      status: COLORS[step.status] ? step.status : "pending",
      role: String(step.role || ""),
      irreversible: Object.keys(effects).length > 0 ? "yes" : "no",
      revised: step.revised ? "yes" : "no",
      // Shown on hover: why a step was re-planned, or why it failed.
      why: String(step.revised || step.error || ""),
      critical: step.critical ? "yes" : "no",
    };
  }

  function elements(data) {
    const steps = (data && data.nodes) || [];
    const ids = new Set(steps.map((s) => String(s.id)));
    const seen = new Set();
    const edges = [];
    for (const e of (data && data.edges) || []) {
      const source = String(e.source), target = String(e.target), id = source + "->" + target;
      // An arrow to a step that is not drawn would make Cytoscape throw; skip it and duplicates.
      if (!ids.has(source) || !ids.has(target) || seen.has(id)) continue;
      seen.add(id);
      edges.push({group: "edges", classes: "dependency", data: {id: id, source: source, target: target, critical: e.critical ? "yes" : "no"}});
    }
    return steps.map((s) => ({group: "nodes", classes: "step", data: nodeData(s)})).concat(edges);
  }

  function style() {
    const rules = [
      {selector: "node.step", style: {
        "shape": "round-rectangle", "corner-radius": 7, "width": NODE_WIDTH, "height": "data(height)",
        "label": "data(label)", "text-wrap": "wrap", "text-max-width": TEXT_WIDTH + 4,
        "text-valign": "center", "text-halign": "center", "text-justification": "center",
        "font-size": FONT_SIZE, "font-family": FONT_FAMILY, "line-height": LINE_HEIGHT,
        "border-width": 1.5, "background-color": COLORS.pending.bg, "border-color": COLORS.pending.border,
        "color": COLORS.pending.text, "min-zoomed-font-size": MIN_FONT_PX, "overlay-opacity": 0,
        "underlay-shape": "round-rectangle", "underlay-padding": 5, "underlay-opacity": 0,
        "underlay-color": COLORS.running.border,
        "transition-property": "underlay-opacity", "transition-duration": PULSE_MS * 0.8 + "ms",
      }},
      {selector: "edge", style: {
        "width": 1.5, "line-color": "#a3abb8", "target-arrow-color": "#a3abb8",
        "target-arrow-shape": "triangle", "arrow-scale": 1, "curve-style": "bezier",
      }},
    ];
    for (const [status, c] of Object.entries(COLORS)) {
      rules.push({selector: `node.step[status = "${status}"]`, style: {
        "background-color": c.bg, "border-color": c.border, "color": c.text, "outline-color": c.border,
      }});
    }
    rules.push(
      {selector: 'node.step[status = "running"]', style: {"border-width": 3, "underlay-opacity": 0.12}},
      {selector: 'node.step[status = "running"].pulse', style: {"underlay-opacity": 0.38}},
      {selector: 'node.step[status = "skipped"]', style: {"border-style": "dashed"}},
      // A step that may act on the world outside the run: a double border, whatever its status.
      {selector: 'node.step[irreversible = "yes"]', style: {"border-style": "double", "border-width": 4}},
      // Added or changed by the last re-plan: a violet halo.
      {selector: 'node.step[revised = "yes"]', style: {"outline-width": 3, "outline-color": "#7c3aed", "outline-offset": 3, "outline-opacity": 0.8}},
      // The synthesizer joins the branches into the answer: a second ring, in its status colour.
      {selector: 'node.step[role = "synthesizer"]', style: {
        "font-weight": "bold", "outline-width": 2, "outline-offset": 3, "outline-opacity": 1,
      }},
      {selector: 'node.step[critical = "yes"]', style: {
        "background-image": CRITICAL_STRIPE, "background-fit": "none", "background-width": 6,
        "background-height": "100%", "background-position-x": 0, "background-position-y": 0,
        "background-clip": "node", "background-repeat": "no-repeat",
      }},
      {selector: 'edge[critical = "yes"]', style: {
        "width": 3.5, "line-color": CRITICAL, "target-arrow-color": CRITICAL, "z-index": 5,
      }},
      {selector: "node.step:selected", style: {"border-color": SELECTED, "border-width": 3}},
      {selector: "edge.related", style: {"line-color": SELECTED, "target-arrow-color": SELECTED, "width": 2.5, "z-index": 10}},
      // Editing (edgehandles), when the plan is still a draft.
      {selector: ".eh-handle", style: {"background-color": SELECTED, "width": 10, "height": 10, "shape": "ellipse", "border-width": 0, "label": ""}},
      {selector: ".eh-hover", style: {"border-color": SELECTED, "border-width": 4}},
      {selector: ".eh-ghost-edge, edge.eh-preview", style: {"line-color": SELECTED, "target-arrow-color": SELECTED, "line-style": "dashed"}},
      {selector: ".eh-ghost-edge.eh-preview-active", style: {"opacity": 0}},
    );
    return rules;
  }

  // Editing: drag from one step onto another to make the second wait for the first; click an
  // arrow to remove it. The graph only proposes; the page asks the server, which decides.
  function enableEditing(cy, container) {
    if (typeof cy.edgehandles !== "function") return null;
    const eh = cy.edgehandles({
      canConnect(source, target) {
        if (source.same(target) || source.data("role") === "synthesizer" || target.data("role") === "synthesizer") return false;
        if (source.edgesTo(target).nonempty()) return false;
        return !target.successors().contains(source);  // would close a cycle
      },
      edgeParams(source, target) { return {data: {source: source.id(), target: target.id()}}; },
      snap: true,
      noEdgeEventsInDraw: true,
      disableBrowserGestures: true,
    });
    eh.enableDrawMode();
    cy.on("ehcomplete", (evt, source, target, edge) => {
      edge.remove();  // the new arrow appears when the server has saved it
      container.dispatchEvent(new CustomEvent("plangraph:connect", {detail: {source: source.id(), target: target.id()}}));
    });
    cy.on("tap", "edge.dependency", (evt) => {
      const e = evt.target;
      container.dispatchEvent(new CustomEvent("plangraph:disconnect", {detail: {source: e.source().id(), target: e.target().id()}}));
    });
    return eh;
  }

  function ensureDagre() {
    const cytoscape = window.cytoscape;
    if (typeof cytoscape !== "function") throw new Error("PlanGraph needs cytoscape: load vendor/cytoscape-*.min.js first.");
    // The dagre bundle registers itself when it finds window.cytoscape; register it if it was loaded first.
    if (!cytoscape("layout", "dagre") && window.cytoscapeDagre) cytoscape.use(window.cytoscapeDagre);
    if (!cytoscape("layout", "dagre")) throw new Error("PlanGraph needs the dagre layout: load vendor/cytoscape-dagre-*.js after cytoscape.");
  }

  function mount(container, data, options) {
    ensureDagre();
    const cy = window.cytoscape({
      container: container,
      elements: [],
      style: style(),
      minZoom: 0.2,
      maxZoom: 2.5,
      // wheelSensitivity stays at Cytoscape's default, a moderate step that calibrates itself to
      // the mouse wheel or trackpad; setting any value logs a warning on every page load.
      autoungrabify: true,  // steps are placed by the layout, not dragged
      boxSelectionEnabled: false,
      selectionType: "single",
    });
    const eh = options && options.editable ? enableEditing(cy, container) : null;
    const plan = () => cy.elements(".step, .dependency");

    function fit() {
      if (cy.nodes(".step").empty()) return;
      cy.resize();
      cy.fit(plan(), FIT_PADDING);
      if (cy.zoom() > MAX_FIT_ZOOM) {
        cy.zoom(MAX_FIT_ZOOM);
        cy.center(plan());
      }
    }

    function layout() {
      cy.layout(Object.assign({}, LAYOUT, {eles: plan()})).run();
    }

    function render(newData) {
      const steps = (newData && newData.nodes) || [];
      container.classList.toggle("plan-graph-large", steps.length > LARGE_PLAN);
      cy.batch(() => {
        plan().remove();
        cy.add(elements(newData));
      });
      layout();
      fit();
    }

    // The same steps and arrows: change labels and colours in place and keep the user's view;
    // anything else is a new plan, laid out and fitted afresh.
    function update(newData) {
      const next = elements(newData);
      const current = plan().map((el) => el.id()).sort().join("\n");
      if (current !== next.map((el) => el.data.id).sort().join("\n")) { render(newData); return; }
      let moved = false;
      cy.batch(() => {
        for (const el of next) {
          // An edited step may move the critical path along the same arrows.
          if (el.group !== "nodes") { cy.getElementById(el.data.id).data("critical", el.data.critical); continue; }
          const node = cy.getElementById(el.data.id);
          moved = moved || node.data("height") !== el.data.height;
          node.data(el.data);
        }
      });
      if (moved) layout();
    }

    function setStatus(stepId, status) {
      const node = cy.getElementById(String(stepId));
      if (node.empty() || !COLORS[status]) return false;
      node.data("status", status);
      return true;
    }

    // The critical steps in order: from the one no critical arrow leads to, along the
    // critical arrows.
    function criticalPath() {
      const arrow = 'edge.dependency[critical = "yes"]';
      let node = cy.nodes('.step[critical = "yes"]').filter((n) => n.incomers(arrow).empty()).first();
      const path = [];
      while (node.nonempty() && !path.includes(node.id())) {
        path.push(node.id());
        node = node.outgoers(arrow).targets().first();
      }
      return path;
    }

    // Clicking a step tells the page, and lights up its arrows in and out.
    cy.on("tap", "node.step", (evt) => {
      container.dispatchEvent(new CustomEvent("plangraph:select", {bubbles: true, detail: {stepId: evt.target.id()}}));
    });
    cy.on("select", "node.step", (evt) => evt.target.connectedEdges(".dependency").addClass("related"));
    cy.on("unselect", "node.step", (evt) => evt.target.connectedEdges(".dependency").removeClass("related"));
    cy.on("mouseover", "node.step", (evt) => {
      container.style.cursor = "pointer";
      container.title = evt.target.data("why") || "";  // the browser's own tooltip: plain text
    });
    cy.on("mouseout", "node.step", () => { container.style.cursor = ""; container.title = ""; });

    // A gentle pulse on running steps, unless the user asked for less motion.
    const calm = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    let pulseOn = false;
    const pulseTimer = calm ? null : window.setInterval(() => {
      if (document.hidden) return;
      const running = cy.nodes('.step[status = "running"]');
      pulseOn = !pulseOn && running.nonempty();
      cy.nodes(".pulse").not(running).removeClass("pulse");
      if (pulseOn) running.addClass("pulse"); else running.removeClass("pulse");
    }, PULSE_MS);

    // The container may get its size after mount (a tab, a collapsed section): refit until the
    // user has zoomed or panned themselves.
    let userMoved = false;
    cy.on("scrollzoom pinchzoom dragpan", () => { userMoved = true; });
    const resizeObserver = window.ResizeObserver ? new ResizeObserver(() => {
      cy.resize();
      if (!userMoved) fit();
    }) : null;
    if (resizeObserver) resizeObserver.observe(container);

    render(data);

    return {
      cy: cy,
      editable: eh !== null,
      setStatus: setStatus,
      update: update,
      fit() { userMoved = false; fit(); },
      status(stepId) {
        const node = cy.getElementById(String(stepId));
        return node.nonempty() ? node.data("status") : null;
      },
      criticalPath: criticalPath,
      destroy() {
        if (pulseTimer !== null) window.clearInterval(pulseTimer);
        if (resizeObserver) resizeObserver.disconnect();
        if (eh) eh.destroy();
        cy.destroy();
        container.style.cursor = "";
        container.classList.remove("plan-graph-large");
      },
    };
  }

  window.PlanGraph = {mount: mount, STATUSES: Object.keys(COLORS)};
})();

// --- A revision's diff on a graph of its own (the proposal box, _plan_proposal.html) ---------
// The template gives the merged plan with the dropped steps kept in place, and marks: step id →
// "added" | "removed" | "changed" | "conflict". markDiff sets them as classes on the nodes;
// the legend's colours are the .legend-diff-* rules at the end of graph.css.
(function () {
  "use strict";
  const DIFF_STYLE = [
    {selector: "node.diff-added", style: {"border-color": "#1f9d55", "border-width": 3, "background-color": "#e6f7ec"}},
    {selector: "node.diff-changed", style: {"border-color": "#b7791f", "border-width": 3, "border-style": "dashed"}},
    {selector: "node.diff-removed", style: {"border-color": "#d64545", "border-width": 2, "border-style": "dotted", "opacity": 0.55}},
    {selector: "node.diff-conflict", style: {"border-color": "#b0307a", "border-width": 4, "background-color": "#fde2f3"}},
  ];

  function markDiff(graph, marks) {
    const cy = graph.cy;
    let sheet = cy.style();
    for (const rule of DIFF_STYLE) sheet = sheet.selector(rule.selector).style(rule.style);
    sheet.update();
    cy.nodes().removeClass("diff-added diff-changed diff-removed diff-conflict");
    for (const [id, mark] of Object.entries(marks || {})) {
      cy.getElementById(String(id)).addClass("diff-" + mark);
    }
  }

  // Each element with data-diff-graph="<id of its json_script>" gets a graph of its own: the
  // proposal box and a version comparison can be on the page at once.
  let mounted = [];  // [{el, graph}]
  function mountDiffGraphs() {
    mounted = mounted.filter((m) => {
      if (document.body.contains(m.el)) return true;
      m.graph.destroy();
      return false;
    });
    document.querySelectorAll("[data-diff-graph]").forEach((el) => {
      if (mounted.some((m) => m.el === el)) return;
      const data = document.getElementById(el.dataset.diffGraph);
      if (!data || !window.PlanGraph) return;
      const parsed = JSON.parse(data.textContent);
      const graph = window.PlanGraph.mount(el, parsed, {editable: false});
      markDiff(graph, parsed.marks);
      mounted.push({el: el, graph: graph});
      // For the browser tests and the curious, as window.planGraph is.
      if (el.id === "proposal-graph") window.proposalGraph = graph;
      else window.versionDiffGraph = graph;
    });
  }

  window.PlanGraph.markDiff = markDiff;
  document.addEventListener("htmx:afterSwap", mountDiffGraphs);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountDiffGraphs);
  else mountDiffGraphs();
})();

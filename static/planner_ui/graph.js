// The plan as a graph: boxes and arrows, laid out left to right by dagre, coloured by status.
// Labels are canvas text, never HTML, so titles from people and models cannot inject markup.
//
//   const graph = PlanGraph.mount(container, {nodes: [{id, title, role, tools, status, critical}],
//                                             edges: [{source, target, critical}]}, {editable: false});
//   graph.setStatus(stepId, status); graph.update(data); graph.fit(); graph.zoomBy(1.25);
//   graph.focusStep(stepId); graph.select(stepId); graph.destroy();
//   graph.criticalPath();  // the ids of the critical steps, first to last
//
// An edge runs from the dependency (source) to the step that waits for it (target).
// Clicking a step, or pressing Enter on it, dispatches "plangraph:select" on the container
// with detail {stepId, keyboard}. A node may carry extra classes (step.classes, e.g. a diff's
// "diff-added"): they are set on the Cytoscape node and on its keyboard button alike.
//
// The canvas cannot take focus, so each step also has a real button laid over its box (in
// .plan-graph-steps, beside the container): Tab reaches the steps, arrow keys move between
// neighbours, Enter opens one, "c" starts an arrow from it and Enter on another step ends it.
// Needs window.cytoscape and the cytoscape-dagre extension loaded first.
(function () {
  "use strict";

  // The step statuses; their colours are CSS custom properties in app.css (--status-<name>,
  // --status-<name>-bg, --status-<name>-text), the one place the graph, its legend and the
  // timeline take them from. The canvas needs plain colours: they are read at mount.
  const STATUSES = ["pending", "queued", "running", "waiting", "succeeded", "failed", "skipped"];
  function statusColors() {
    const css = window.getComputedStyle(document.documentElement);
    const read = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
    const colors = {};
    for (const status of STATUSES) {
      colors[status] = {
        bg: read("--status-" + status + "-bg", "#eef0f3"),
        border: read("--status-" + status, "#98a2b3"),
        text: read("--status-" + status + "-text", "#344054"),
      };
    }
    return colors;
  }
  let COLORS = statusColors();
  const SELECTED = "#3656d6";
  // The critical path (the most model calls one after another, see core/estimate.py): thick
  // violet arrows and a violet stripe down the left of each box. Kept in step with
  // .legend-critical in graph.css.
  const CRITICAL = "#7c3aed";
  const CRITICAL_STRIPE = "data:image/svg+xml;utf8," + encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" width="6" height="10"><rect width="6" height="10" fill="' + CRITICAL + '"/></svg>');
  // A step that may act on the world outside the run (send, delete, spend, unsandboxed
  // commands): a dark warning triangle in its top right corner, a mark nothing else uses.
  // The legend draws the same file (graph.css, .legend-irreversible).
  const IRREVERSIBLE_ICON = "data:image/svg+xml;utf8," + encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">' +
    '<path d="M8 1.2 15.2 14.4H.8Z" fill="#1d2330"/><path d="M7.1 5.4h1.8l-.3 5H7.4Z M8 11.3a1 1 0 1 1 0 2 1 1 0 0 1 0-2Z" fill="#fff"/></svg>');

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
  // Past this many steps dagre took seconds with the page frozen (20 s at 1,000 steps, 15 of
  // them its network-simplex ranking; 4 with its longest-path ranking): columnsLayout instead.
  // A plan the planner writes (60 steps at most) is always laid out by dagre.
  const BIG_PLAN = 100;
  const FIT_PADDING = 24;
  // A small plan fitted to the box would be blown up to the maximum zoom: stop a bit above 1.
  const MAX_FIT_ZOOM = 1.25;
  const PULSE_MS = 900;
  // Past this many steps the graph grows (see .plan-graph-large) so the fitted plan is not
  // drawn too small to read; labels smaller than MIN_FONT_PX on screen are left out until the
  // user zooms in, which keeps the overview a clean map of coloured boxes.
  const LARGE_PLAN = 20;
  const MIN_FONT_PX = 5;
  // A small plan's box is as tall as the plan needs, between these; a large one's is set by
  // .plan-graph-large in graph.css.
  const MIN_HEIGHT = 200;
  const MAX_HEIGHT = 420;
  // How long a refused connection's reason stays next to the pointer after the drag ends.
  const REFUSAL_MS = 5000;
  const EXTRA_CLASS = /^[a-z][a-z0-9-]{0,40}$/;
  const SYNTHESIZER_REFUSAL = "The synthesizer always runs last, after every other step: it takes no arrows by hand.";

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
      title: String(step.title || step.id),
    };
  }

  // Extra marks a caller gives a step (a diff's added / removed / changed, say), as classes.
  function extraClasses(step) {
    const given = Array.isArray(step.classes) ? step.classes.map(String) : [];
    return given.filter((c) => EXTRA_CLASS.test(c));
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
    return steps.map((s) => ({group: "nodes", classes: ["step"].concat(extraClasses(s)).join(" "), data: nodeData(s)})).concat(edges);
  }

  // A layered layout in time linear in the plan's arrows, for plans past BIG_PLAN: each step in
  // the column of its longest chain of dependencies, each column ordered by the mean row of
  // the steps its steps wait on (then of those waiting on them), a few sweeps each way, its
  // boxes stacked and centred. Crosses more arrows than dagre; a plan that big is read as a map.
  function columnsLayout(cy) {
    const ids = cy.nodes(".step").map((n) => n.id());
    const parents = new Map(ids.map((id) => [id, []])), children = new Map(ids.map((id) => [id, []]));
    cy.edges(".dependency").forEach((e) => {
      const source = e.source().id(), target = e.target().id();
      if (!parents.has(target) || !children.has(source)) return;
      parents.get(target).push(source);
      children.get(source).push(target);
    });
    // Longest paths, in Kahn's order (a plan is a DAG; a step on a cycle would stay in column 0).
    const waiting = new Map(ids.map((id) => [id, parents.get(id).length]));
    const column = new Map(), ready = ids.filter((id) => waiting.get(id) === 0);
    for (let i = 0; i < ready.length; i++) {
      const at = column.get(ready[i]) || 0;
      for (const child of children.get(ready[i])) {
        column.set(child, Math.max(column.get(child) || 0, at + 1));
        waiting.set(child, waiting.get(child) - 1);
        if (waiting.get(child) === 0) ready.push(child);
      }
    }
    const columns = [];
    for (const id of ids) (columns[column.get(id) || 0] ||= []).push(id);
    const row = new Map();
    const number = (col) => col.forEach((id, i) => row.set(id, i));
    columns.forEach(number);
    const meanRow = (near, own) => (near.length ? near.reduce((sum, id) => sum + row.get(id), 0) / near.length : own);
    for (let sweep = 0; sweep < 4; sweep++) {
      const down = sweep % 2 === 0;
      for (const col of down ? columns.slice(1) : columns.slice(0, -1).reverse()) {
        if (!col) continue;
        const key = new Map(col.map((id) => [id, meanRow((down ? parents : children).get(id), row.get(id))]));
        col.sort((a, b) => key.get(a) - key.get(b));
        number(col);
      }
    }
    const positions = {};
    columns.forEach((col, c) => {
      const heights = col.map((id) => cy.getElementById(id).data("height"));
      let y = -(heights.reduce((sum, h) => sum + h, 0) + LAYOUT.nodeSep * (col.length - 1)) / 2;
      col.forEach((id, i) => {
        positions[id] = {x: c * (NODE_WIDTH + LAYOUT.rankSep), y: y + heights[i] / 2};
        y += heights[i] + LAYOUT.nodeSep;
      });
    });
    return positions;
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
      {selector: 'node.step[irreversible = "yes"]', style: {
        "background-image": IRREVERSIBLE_ICON, "background-fit": "none", "background-width": 14,
        "background-height": 14, "background-position-x": NODE_WIDTH - 18, "background-position-y": 4,
        "background-clip": "node", "background-repeat": "no-repeat", "background-image-containment": "over",
      }},
      {selector: 'node.step[irreversible = "yes"][critical = "yes"]', style: {
        "background-image": [CRITICAL_STRIPE, IRREVERSIBLE_ICON], "background-fit": ["none", "none"],
        "background-width": [6, 14], "background-height": ["100%", 14],
        "background-position-x": [0, NODE_WIDTH - 18], "background-position-y": [0, 4],
        "background-repeat": ["no-repeat", "no-repeat"], "background-clip": ["node", "node"],
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
      {selector: "node.step.connect-source", style: {"border-color": SELECTED, "border-width": 4, "border-style": "dashed"}},
    );
    return rules;
  }

  // Why an arrow from source to target is refused, in a person's words, or "" when it may be
  // drawn. The server checks again and has the last word.
  function refusal(source, target) {
    const name = (n) => "“" + (n.data("title") || n.id()) + "”";
    if (source.same(target)) return "A step cannot wait for itself.";
    if (source.data("role") === "synthesizer" || target.data("role") === "synthesizer") {
      return SYNTHESIZER_REFUSAL;
    }
    if (source.edgesTo(target).nonempty()) return name(target) + " already waits for " + name(source) + ".";
    if (target.successors().contains(source)) {
      return "Refused: " + name(source) + " already waits for " + name(target) + ", so this arrow would close a cycle.";
    }
    return "";
  }

  // Editing: drag from one step onto another to make the second wait for the first; click an
  // arrow to remove it. The graph only proposes; the page asks the server, which decides. A
  // refused drag says why next to the pointer (tip, a role="status" element beside the canvas).
  function enableEditing(cy, container, tip) {
    if (typeof cy.edgehandles !== "function") return null;
    const eh = cy.edgehandles({
      canConnect(source, target) { return !refusal(source, target); },
      edgeParams(source, target) { return {data: {source: source.id(), target: target.id()}}; },
      snap: true,
      noEdgeEventsInDraw: true,
      disableBrowserGestures: true,
    });
    eh.enableDrawMode();
    let dragSource = null;
    let refusedAt = null;  // the reason shown and where, while the pointer is on a refused step
    const stepAt = (pos) => cy.nodes(".step").filter((n) => {
      const box = n.boundingBox({includeLabels: false, includeOverlays: false});
      return pos.x >= box.x1 && pos.x <= box.x2 && pos.y >= box.y1 && pos.y <= box.y2;
    }).first();
    cy.on("ehstart", (evt, source) => { dragSource = source; refusedAt = null; tip.hide(); });
    cy.on("vmousemove tapdrag", (evt) => {
      if (!dragSource) return;
      const over = stepAt(evt.position);
      const why = over.nonempty() && !over.same(dragSource) ? refusal(dragSource, over) : "";
      if (why) { refusedAt = why; tip.show(why, evt.renderedPosition); }
      else if (refusedAt) { refusedAt = null; tip.hide(); }
    });
    cy.on("ehstop", () => {
      dragSource = null;
      // Released on a refused step: the reason stays a moment longer, where it was.
      if (refusedAt) tip.hideAfter(REFUSAL_MS);
      refusedAt = null;
    });
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

  // The message next to the pointer (or next to the focused step, from the keyboard).
  function makeTip(container) {
    const el = document.createElement("div");
    el.className = "plan-graph-tip";
    el.id = (container.id || "plan-graph") + "-refusal";
    el.setAttribute("role", "status");
    el.hidden = true;
    container.insertAdjacentElement("afterend", el);
    let timer = null;
    return {
      el: el,
      show(text, at) {
        window.clearTimeout(timer);
        el.textContent = text;
        el.hidden = false;
        // Placed in the graph's box, a little below and right of the point, kept inside.
        const width = container.clientWidth, height = container.clientHeight;
        const x = Math.max(4, Math.min(at.x + 14, width - el.offsetWidth - 4));
        const y = at.y + 18 + el.offsetHeight > height ? Math.max(4, at.y - el.offsetHeight - 12) : at.y + 18;
        el.style.left = container.offsetLeft + x + "px";
        el.style.top = container.offsetTop + y + "px";
      },
      hide() { window.clearTimeout(timer); el.hidden = true; },
      hideAfter(ms) { window.clearTimeout(timer); timer = window.setTimeout(() => { el.hidden = true; }, ms); },
      destroy() { window.clearTimeout(timer); el.remove(); },
    };
  }

  // One button per step, laid over its box: what the keyboard and screen readers use.
  function makeKeys(cy, container, tip, editable) {
    const list = document.createElement("ul");
    list.className = "plan-graph-steps";
    list.setAttribute("aria-label", "Steps of the plan");
    container.insertAdjacentElement("afterend", list);
    const buttons = new Map();
    let connectFrom = null;  // the step an arrow is being drawn from, from the keyboard

    function describe(node) {
      const parts = [node.data("title"), node.data("status")];
      if (node.data("irreversible") === "yes") parts.push("irreversible");
      if (node.data("critical") === "yes") parts.push("on the critical path");
      const waits = node.incomers("node.step").map((n) => n.data("title"));
      if (waits.length) parts.push("after " + waits.join(", "));
      return parts.join(", ");
    }

    function sync() {
      const nodes = cy.nodes(".step");
      const seen = new Set();
      nodes.forEach((node) => {
        const id = node.id();
        seen.add(id);
        let button = buttons.get(id);
        if (!button) {
          const li = document.createElement("li");
          button = document.createElement("button");
          button.type = "button";
          button.className = "plan-graph-step";
          button.dataset.stepId = id;
          li.append(button);
          list.append(li);
          buttons.set(id, button);
        }
        label(node, button);
      });
      for (const [id, button] of buttons) {
        if (!seen.has(id)) { button.parentElement.remove(); buttons.delete(id); }
      }
      place();
    }

    function label(node, button) {
      button.setAttribute("aria-label", describe(node));
      button.dataset.status = node.data("status");
      button.dataset.classes = node.classes().filter((c) => c !== "step").join(" ");
      if (node.selected()) button.setAttribute("aria-current", "true"); else button.removeAttribute("aria-current");
    }

    // A step whose status or selection changed: its own button, where sync() redid every
    // step's (on each event of a 1,000-step run, 7 of the page's 12 s of script while it ran).
    function update(node) {
      const button = buttons.get(node.id());
      if (button) label(node, button); else sync();
    }

    // Each button covers its box, in the container's coordinates.
    function place() {
      const zoom = cy.zoom();
      // Read once: read between the writes below, the container's offset made the browser lay
      // the page out again for every step (2 s of a 1,000-step page).
      const left = container.offsetLeft, top = container.offsetTop;
      for (const [id, button] of buttons) {
        const node = cy.getElementById(id);
        if (node.empty()) continue;
        const p = node.renderedPosition(), w = node.width() * zoom, h = node.height() * zoom;
        button.style.left = left + p.x - w / 2 + "px";
        button.style.top = top + p.y - h / 2 + "px";
        button.style.width = w + "px";
        button.style.height = h + "px";
      }
    }

    // The nearest step in the direction of an arrow key, by the boxes' centres on screen.
    function neighbour(node, key) {
      const dir = {ArrowRight: [1, 0], ArrowLeft: [-1, 0], ArrowDown: [0, 1], ArrowUp: [0, -1]}[key];
      const from = node.position();
      let best = null, bestScore = Infinity;
      cy.nodes(".step").forEach((other) => {
        if (other.same(node)) return;
        const p = other.position(), dx = p.x - from.x, dy = p.y - from.y;
        const along = dx * dir[0] + dy * dir[1];
        if (along <= 1) return;
        const across = Math.abs(dx * dir[1] - dy * dir[0]);
        const score = along + 2 * across;
        if (score < bestScore) { bestScore = score; best = other; }
      });
      return best;
    }

    // A step the keyboard reaches outside the view is brought into it: a large plan is
    // navigated from the keyboard too.
    function bringIntoView(node) {
      const ext = cy.extent(), p = node.position();
      if (p.x < ext.x1 || p.x > ext.x2 || p.y < ext.y1 || p.y > ext.y2) { cy.center(node); place(); }
    }

    function focusStep(id) {
      const node = cy.getElementById(String(id));
      const button = buttons.get(String(id));
      if (node.empty() || !button) return false;
      bringIntoView(node);
      button.focus({preventScroll: true});
      return true;
    }

    function endConnect() {
      if (connectFrom) cy.getElementById(connectFrom).removeClass("connect-source");
      connectFrom = null;
      list.classList.remove("connecting");
    }

    list.addEventListener("click", (e) => {
      const button = e.target.closest(".plan-graph-step");
      if (!button) return;
      const id = button.dataset.stepId;
      if (connectFrom) {
        const source = cy.getElementById(connectFrom), target = cy.getElementById(id);
        const why = source.same(target) ? "" : refusal(source, target);
        endConnect();
        if (source.same(target)) { tip.show("Connecting cancelled.", target.renderedPosition()); tip.hideAfter(REFUSAL_MS); return; }
        if (why) { tip.show(why, target.renderedPosition()); tip.hideAfter(REFUSAL_MS); return; }
        tip.hide();
        container.dispatchEvent(new CustomEvent("plangraph:connect", {detail: {source: source.id(), target: target.id()}}));
        return;
      }
      container.dispatchEvent(new CustomEvent("plangraph:select", {bubbles: true, detail: {stepId: id, keyboard: true}}));
    });
    list.addEventListener("focusin", (e) => {
      const button = e.target.closest(".plan-graph-step");
      if (button) bringIntoView(cy.getElementById(button.dataset.stepId));
    });
    list.addEventListener("keydown", (e) => {
      const button = e.target.closest(".plan-graph-step");
      if (!button) return;
      const node = cy.getElementById(button.dataset.stepId);
      if (e.key.startsWith("Arrow")) {
        const next = neighbour(node, e.key);
        if (next) focusStep(next.id());
        e.preventDefault();
      } else if (e.key === "Escape" && connectFrom) {
        endConnect();
        tip.hide();
        e.preventDefault();
      } else if ((e.key === "c" || e.key === "C") && editable && !e.ctrlKey && !e.metaKey && !e.altKey) {
        if (node.data("role") === "synthesizer") {
          tip.show(SYNTHESIZER_REFUSAL, node.renderedPosition());
          tip.hideAfter(REFUSAL_MS);
          return;
        }
        endConnect();
        connectFrom = node.id();
        node.addClass("connect-source");
        list.classList.add("connecting");
        tip.show("Connecting from “" + node.data("title") + "”: move to the step that should wait for it and press Enter (Escape cancels).", node.renderedPosition());
        e.preventDefault();
      } else if ((e.key === "Delete" || e.key === "Backspace") && editable) {
        container.dispatchEvent(new CustomEvent("plangraph:delete", {bubbles: true, detail: {stepId: node.id()}}));
        e.preventDefault();
      }
    });
    cy.on("viewport", place);
    return {
      list: list, sync: sync, update: update, place: place, focusStep: focusStep,
      destroy() { endConnect(); list.remove(); },
    };
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
    COLORS = statusColors();
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
    const editable = Boolean(options && options.editable);
    const tip = makeTip(container);
    const eh = editable ? enableEditing(cy, container, tip) : null;
    const keys = makeKeys(cy, container, tip, eh !== null);
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
      const big = cy.nodes(".step").length > BIG_PLAN;
      const how = big ? {name: "preset", positions: columnsLayout(cy), fit: false, animate: false} : LAYOUT;
      cy.layout(Object.assign({}, how, {eles: plan()})).run();
    }

    function render(newData) {
      const steps = (newData && newData.nodes) || [];
      if (container.parentElement) container.parentElement.classList.toggle("plan-graph-large", steps.length > LARGE_PLAN);
      cy.batch(() => {
        plan().remove();
        cy.add(elements(newData));
      });
      layout();
      sizeToPlan(steps.length);
      fit();
      keys.sync();
    }

    // On the parent, which htmx's settling leaves alone (graph.css).
    function sizeToPlan(count) {
      const holder = container.parentElement;
      if (!holder) return;
      if (count > LARGE_PLAN) { holder.style.removeProperty("--plan-graph-height"); return; }
      const box = plan().boundingBox();
      const want = Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, box.h * MAX_FIT_ZOOM + 2 * FIT_PADDING));
      holder.style.setProperty("--plan-graph-height", Math.round(want) + "px");
      cy.resize();
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
          node.classes(el.classes);
        }
      });
      if (moved) { layout(); sizeToPlan(cy.nodes(".step").length); }
      keys.sync();
    }

    function setStatus(stepId, status) {
      const node = cy.getElementById(String(stepId));
      if (node.empty() || !COLORS[status]) return false;
      node.data("status", status);
      keys.update(node);
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
    cy.on("select", "node.step", (evt) => { evt.target.connectedEdges(".dependency").addClass("related"); keys.update(evt.target); });
    cy.on("unselect", "node.step", (evt) => { evt.target.connectedEdges(".dependency").removeClass("related"); keys.update(evt.target); });
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
      keys.place();
    }) : null;
    if (resizeObserver) resizeObserver.observe(container);

    render(data);

    return {
      cy: cy,
      editable: eh !== null,
      setStatus: setStatus,
      update: update,
      fit() { userMoved = false; fit(); keys.place(); },
      zoomBy(factor) {
        userMoved = true;
        const level = Math.max(cy.minZoom(), Math.min(cy.maxZoom(), cy.zoom() * factor));
        cy.zoom({level: level, renderedPosition: {x: cy.width() / 2, y: cy.height() / 2}});
      },
      // Selects a step (its arrows light up) without telling the page, or none with null.
      select(stepId) {
        cy.nodes(":selected").unselect();
        if (stepId !== null && stepId !== undefined) cy.getElementById(String(stepId)).select();
      },
      focusStep: (stepId) => keys.focusStep(stepId),
      refusalTip: tip.el,
      status(stepId) {
        const node = cy.getElementById(String(stepId));
        return node.nonempty() ? node.data("status") : null;
      },
      criticalPath: criticalPath,
      destroy() {
        if (pulseTimer !== null) window.clearInterval(pulseTimer);
        if (resizeObserver) resizeObserver.disconnect();
        if (eh) eh.destroy();
        keys.destroy();
        tip.destroy();
        cy.destroy();
        container.style.cursor = "";
        if (container.parentElement) {
          container.parentElement.classList.remove("plan-graph-large");
          container.parentElement.style.removeProperty("--plan-graph-height");
        }
      },
    };
  }

  window.PlanGraph = {mount: mount, STATUSES: STATUSES};
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

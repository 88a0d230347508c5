// The plan as a read-only graph: boxes and arrows, laid out left to right, coloured by status.
// Labels are canvas text, never HTML, so titles from people and models cannot inject markup.
(function () {
  "use strict";

  const COLORS = {
    pending: {bg: "#eef0f3", border: "#98a2b3", text: "#344054"},
    queued: {bg: "#e6eeff", border: "#5b8def", text: "#1d3a8a"},
    running: {bg: "#fff1cc", border: "#d99a1e", text: "#5c3d00"},
    succeeded: {bg: "#e2f6ea", border: "#1f9d55", text: "#0f4d2a"},
    failed: {bg: "#fde7e7", border: "#d64545", text: "#7a1b1b"},
    skipped: {bg: "#f6f7f9", border: "#c0c5cc", text: "#98a2b3"},
  };

  function label(node) {
    const tools = node.tools && node.tools.length ? " · " + node.tools.join(", ") : "";
    return node.title + "\n" + node.role + tools;
  }

  function elements(data) {
    const nodes = data.nodes.map((n) => ({
      group: "nodes",
      data: {id: n.id, label: label(n), status: n.status || "pending", role: n.role},
    }));
    const ids = new Set(data.nodes.map((n) => n.id));
    const edges = data.edges
      .filter((e) => ids.has(e.source) && ids.has(e.target))
      .map((e) => ({group: "edges", data: {id: e.source + "->" + e.target, source: e.source, target: e.target}}));
    return nodes.concat(edges);
  }

  function style() {
    const rules = [
      {selector: "node", style: {
        "shape": "round-rectangle", "width": 190, "height": "label", "padding": "10px",
        "label": "data(label)", "text-wrap": "wrap", "text-max-width": "180px",
        "text-valign": "center", "text-halign": "center", "font-size": 12,
        "font-family": "system-ui, sans-serif", "line-height": 1.35,
        "border-width": 2, "background-color": COLORS.pending.bg, "border-color": COLORS.pending.border,
        "color": COLORS.pending.text,
      }},
      {selector: "node[role = 'synthesizer']", style: {"border-style": "double", "border-width": 5, "shape": "round-hexagon"}},
      {selector: "node:selected", style: {"overlay-color": "#3656d6", "overlay-opacity": 0.12, "overlay-padding": 6}},
      {selector: ".eh-handle", style: {"background-color": "#3656d6", "width": 10, "height": 10, "shape": "ellipse", "border-width": 0}},
      {selector: ".eh-ghost-edge, edge.eh-preview", style: {"line-color": "#3656d6", "target-arrow-color": "#3656d6", "line-style": "dashed"}},
      {selector: ".eh-hover", style: {"border-color": "#3656d6", "border-width": 4}},
      {selector: "edge", style: {
        "width": 1.6, "line-color": "#98a2b3", "target-arrow-color": "#98a2b3",
        "target-arrow-shape": "triangle", "curve-style": "bezier", "arrow-scale": 1.1,
      }},
    ];
    for (const [status, c] of Object.entries(COLORS)) {
      rules.push({selector: `node[status = '${status}']`, style: {
        "background-color": c.bg, "border-color": c.border, "color": c.text,
        "border-width": status === "running" ? 4 : 2,
        "border-style": status === "skipped" ? "dashed" : "solid",
      }});
    }
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
    cy.on("tap", "edge", (evt) => {
      const e = evt.target;
      container.dispatchEvent(new CustomEvent("plangraph:disconnect", {detail: {source: e.source().id(), target: e.target().id()}}));
    });
    return eh;
  }

  function mount(container, data, options) {
    const cy = window.cytoscape({
      container: container,
      elements: elements(data),
      style: style(),
      layout: {name: "dagre", rankDir: "LR", nodeSep: 24, rankSep: 70, edgeSep: 10, fit: true, padding: 24},
      minZoom: 0.2,
      maxZoom: 2.5,
      wheelSensitivity: 0.3,
      autoungrabify: true,
      boxSelectionEnabled: false,
    });
    const eh = options && options.editable ? enableEditing(cy, container) : null;
    cy.on("tap", "node", (evt) => {
      container.dispatchEvent(new CustomEvent("plangraph:select", {detail: {stepId: evt.target.id()}}));
    });
    return {
      cy: cy,
      setStatus(stepId, status) {
        const node = cy.getElementById(stepId);
        if (node.nonempty()) node.data("status", status);
      },
      update(newData) {
        cy.elements().remove();
        cy.add(elements(newData));
        cy.layout({name: "dagre", rankDir: "LR", nodeSep: 24, rankSep: 70, fit: true, padding: 24}).run();
      },
      fit() { cy.fit(undefined, 24); },
      status(stepId) { const n = cy.getElementById(stepId); return n.nonempty() ? n.data("status") : null; },
      editable: eh !== null,
      destroy() { if (eh) eh.destroy(); cy.destroy(); },
    };
  }

  window.PlanGraph = {mount: mount};
})();

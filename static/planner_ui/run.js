// The run page's live part: one WebSocket that replays missed events, then streams new ones.
// Every text from the server is inserted with textContent, never as HTML.
(function () {
  "use strict";
  const page = document.getElementById("run-page");
  if (!page) return;
  const runId = page.dataset.runId;
  const fragmentUrl = page.dataset.fragmentUrl;
  const log = document.getElementById("event-log");
  const wsState = document.getElementById("ws-state");
  let lastSeq = 0;
  // The server rendered the cards as of this event; older events only go to the log.
  let renderedSeq = 0;
  function readRenderedSeq() {
    const header = document.getElementById("run-header");
    renderedSeq = header ? parseInt(header.dataset.seq || "0", 10) : 0;
  }
  let graph = null;
  let retryMs = 500;
  let stopped = false;

  function mountGraph() {
    const data = document.getElementById("plan-graph-data");
    const el = document.getElementById("plan-graph");
    // afterSwap fires again for out-of-band parts of the same response: mount once per element.
    if (graph && el && graph.cy.container() === el) return;
    if (graph) { graph.destroy(); graph = null; }
    if (!data || !el || !window.PlanGraph) return;
    const header = document.getElementById("run-header");
    const editable = header && header.dataset.editable === "yes";
    graph = window.PlanGraph.mount(el, JSON.parse(data.textContent), {editable: editable});
    window.planGraph = graph;  // for the browser tests and the curious
    const button = (id, act) => { const b = document.getElementById(id); if (b) b.addEventListener("click", act); };
    button("plan-graph-fit", () => graph.fit());
    button("plan-graph-zoom-in", () => graph.zoomBy(1.25));
    button("plan-graph-zoom-out", () => graph.zoomBy(0.8));
    button("step-panel-close", () => closePanel());
    el.addEventListener("plangraph:connect", (e) => {
      postChange({op: "add_dependency", step_id: e.detail.target, depends_on: e.detail.source});
    });
    el.addEventListener("plangraph:disconnect", (e) => {
      if (window.confirm("Remove the dependency " + e.detail.source + " → " + e.detail.target + "?")) {
        postChange({op: "remove_dependency", step_id: e.detail.target, depends_on: e.detail.source});
      }
    });
    el.addEventListener("plangraph:select", (e) => openStep(e.detail.stepId, {focusPanel: Boolean(e.detail.keyboard)}));
    // Delete from the keyboard: the step's own delete form, which asks what becomes of the
    // steps after it, opened with focus on its button.
    el.addEventListener("plangraph:delete", (e) => {
      const card = openStep(e.detail.stepId, {focusPanel: false});
      const editor = card && card.querySelector("details.step-editor");
      if (!editor) { if (card) focusPanel(card); return; }
      editor.open = true;
      formsReady(editor).then(() => {
        const remove = editor.querySelector("input[name=op][value=delete]");
        if (remove) remove.form.querySelector("button[type=submit]").focus();
        else focusPanel(card);
      });
    });
  }

  // The side panel shows the open step's card; the graph stays where it is.
  let openStepId = null;
  // Kept for this tab, so a reload (approving the plan is one) shows the same step.
  const openKey = "agentsite.run." + runId + ".open-step";
  function remember(stepId) {
    try { if (stepId) window.sessionStorage.setItem(openKey, stepId); else window.sessionStorage.removeItem(openKey); } catch (e) { /* storage off */ }
  }
  function remembered() {
    try { return window.sessionStorage.getItem(openKey); } catch (e) { return null; }
  }
  function openStep(stepId, options) {
    const card = stepCard(stepId);
    const panel = document.getElementById("step-panel");
    if (!card || !panel) return null;
    openStepId = stepId;
    remember(stepId);
    // Attributes, not classes: htmx's settling puts a swapped element's classes back.
    for (const other of panel.querySelectorAll(".step[data-open]")) if (other !== card) delete other.dataset.open;
    card.dataset.open = "yes";
    panel.hidden = false;
    const workspace = document.getElementById("workspace");
    if (workspace) workspace.dataset.panel = "open";
    if (graph) graph.select(stepId);
    if (options && options.focusPanel) focusPanel(card);
    follow();
    return card;
  }
  function focusPanel(card) {
    const title = card.querySelector(".step-title");
    if (title) title.focus();
  }
  function closePanel() {
    const panel = document.getElementById("step-panel");
    const was = openStepId;
    openStepId = null;
    remember(null);
    if (panel) {
      panel.hidden = true;
      for (const card of panel.querySelectorAll(".step[data-open]")) delete card.dataset.open;
    }
    const workspace = document.getElementById("workspace");
    if (workspace) delete workspace.dataset.panel;
    if (graph) { graph.select(null); if (was) graph.focusStep(was); }
    follow();
  }
  // After a swap the cards are new: the open one opens again, if it is still in the plan.
  function reopenStep() {
    if (openStepId && !openStep(openStepId, {focusPanel: false})) closePanel();
  }
  page.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || !openStepId) return;
    const panel = document.getElementById("step-panel");
    if (panel && panel.contains(document.activeElement)) { closePanel(); e.preventDefault(); }
  });
  page.addEventListener("click", (e) => {
    // A link to a step (the estimate, the receipts, "After: ...") opens it beside the graph.
    const link = e.target.closest("a[href^='#step-']");
    if (link) {
      const stepId = link.getAttribute("href").slice("#step-".length);
      if (openStep(stepId, {focusPanel: true})) {
        e.preventDefault();
        const workspace = document.getElementById("workspace");
        if (workspace) workspace.scrollIntoView({block: "nearest"});
      }
      return;
    }
    const more = e.target.closest(".show-more");
    if (more) toggleFold(more);
  });
  // Folds a long output or result, or unfolds it (`folded`: which, else the other way); the
  // first time it unfolds, it fetches the rest.
  function toggleFold(more, folded) {
    const output = document.getElementById(more.getAttribute("aria-controls"));
    if (!output || more.loading) return;
    if (folded === undefined) folded = !output.classList.contains("collapsed");
    if (!folded && more.dataset.src) {
      wholeText(more, output).then(
        () => setFolded(more, output, false),
        () => { more.textContent = "Show more (the rest did not load: try again)"; });
      return;
    }
    setFolded(more, output, folded);
  }
  function setFolded(more, output, folded) {
    output.classList.toggle("collapsed", folded);
    more.setAttribute("aria-expanded", folded ? "false" : "true");
    more.textContent = folded ? "Show more" : "Show less";
  }
  // A long output or result comes with the page as its opening (core.fold); the rest is
  // fetched the first time it unfolds. The server sanitized it (nh3), as it does the opening.
  function wholeText(more, output) {
    more.textContent = "Loading…";
    more.loading = fetch(more.dataset.src, {headers: {"HX-Request": "true"}, credentials: "same-origin"})
      .then((response) => {
        if (!response.ok) throw new Error(`${response.status} from ${more.dataset.src}`);
        return response.text();
      })
      .then((html) => { output.innerHTML = html; more.removeAttribute("data-src"); })
      .finally(() => { more.loading = null; });
    return more.loading;
  }

  // Steps finished, in the summary line, as the socket reports them: counted once a frame,
  // not once an event (every step's status, five events a step).
  let countPending = false;
  function countFinished() {
    if (countPending) return;
    countPending = true;
    requestAnimationFrame(() => {
      countPending = false;
      const done = document.getElementById("run-steps-done");
      if (!done || !graph) return;
      const statuses = graph.cy.nodes(".step").map((n) => n.data("status"));
      done.textContent = statuses.filter((status) => finished(status)).length.toString();
    });
  }

  // Graph edits go through the same endpoint as the forms, against the version on screen.
  function postChange(values) {
    edited = {stepId: values.step_id, key: null};
    const header = document.getElementById("run-header");
    values.base_version = header ? header.dataset.version : "0";
    htmx.ajax("POST", page.dataset.changeUrl, {
      source: "#run-page", target: "#run-main", swap: "innerHTML", values: values,
      headers: {"X-CSRFToken": page.dataset.csrf},
    });
  }

  // htmx sends the requests of one source element one at a time and keeps only the newest
  // waiting: with every request on the page's body, a card fetch or a timeline refresh asked
  // for while a refresh was on its way replaced the refresh waiting behind it, and an event's
  // change never showed (seen in CI: an approval missing from the page). So changes, refreshes,
  // card fetches and the timeline each have a source of their own.
  //
  // While a change is on its way, its own response brings the page as of some event: a
  // refresh asked for meanwhile is made afterwards only if its event is newer than that (most
  // are the change's own, and would only re-mount the graph a second time). A refresh asked for
  // before the change went out is older than the change's answer, and swapping it in would
  // detach the form whose answer is on its way: htmx then finds no #plan-notice for the outcome
  // (it looks in the form's detached tree). Such a refresh is dropped.
  let changesInFlight = 0;
  let changesStarted = 0;
  let owedSeq = 0;  // the newest event whose refresh waits for the changes to land
  function isChange(e) {
    return e.detail.target && e.detail.target.id === "run-main" && e.detail.requestConfig && e.detail.requestConfig.verb === "post";
  }
  function refreshOf(e) {
    const id = e.detail.target && e.detail.target.id;
    return (id === "run-main" || id === "steps") && e.detail.requestConfig && e.detail.requestConfig.verb === "get" ? id : null;
  }
  // What a change was made on, so focus can go back to it once the answer is swapped in:
  // the step in the graph, else the same control in the new page.
  let edited = null;
  function noteEdited(e) {
    const form = e.detail.elt && e.detail.elt.closest ? e.detail.elt.closest("form") : null;
    if (!form) return;
    const step = form.querySelector("input[name=step_id]");
    const active = document.activeElement;
    edited = {stepId: step ? step.value : null, key: active && form.contains(active) ? partKey(active) : null};
  }
  function restoreEdited() {
    const was = edited;
    edited = null;
    if (!was) return;
    if (was.stepId && graph && graph.status(was.stepId) !== null) {
      if (openStepId === was.stepId) openStep(was.stepId, {focusPanel: false});
      graph.focusStep(was.stepId);
      return;
    }
    const main = document.getElementById("run-main");
    if (was.key && main) {
      for (const el of main.querySelectorAll("button, input, select, textarea, summary")) {
        if (partKey(el) === was.key) { el.focus(); return; }
      }
    }
    const heading = document.getElementById("plan-heading");
    if (heading) { heading.tabIndex = -1; heading.focus(); }
  }
  document.body.addEventListener("htmx:beforeRequest", (e) => {
    if (isChange(e)) { changesInFlight++; changesStarted++; if (e.detail.elt !== page) noteEdited(e); }
    else if (refreshOf(e)) e.detail.xhr.changesBefore = changesStarted;
  });
  document.body.addEventListener("htmx:afterRequest", (e) => {
    // A card fetch's cards are all swapped in by now: what was noted for them is spent.
    if (e.detail.elt && e.detail.elt.id === "cards-requests") keptCards = null;
    if (!isChange(e)) return;
    changesInFlight = Math.max(0, changesInFlight - 1);
    if (changesInFlight > 0) return;
    // The answer has been swapped in by now, and renderedSeq read from it.
    if (owedSeq > renderedSeq) refreshMain();
    owedSeq = 0;
    if (dirtySeq > renderedSeq) { if (!cardTimer) cardTimer = setTimeout(fetchCards, 120); }
    else dirtyCards.clear();
  });
  // A refresh for an event that changes only the cards it names (`light`) asks the server to
  // leave the plan's workspace out if its key is still the one on the page (views.render_run):
  // the graph and the cards stay, and the named cards are fetched as any step's are. At 1,000
  // steps a whole refresh was 2.5 s of a frozen page. A refresh any event wanted whole is owed
  // until a whole render as new as that event is swapped in: htmx keeps only the newest
  // request waiting, and a light one must not stand in for it.
  let wholeOwedSeq = 0;
  function refreshMain(light) {
    if (!light) wholeOwedSeq = Math.max(wholeOwedSeq, lastSeq, 1);
    if (changesInFlight > 0) { owedSeq = Math.max(owedSeq, lastSeq); return; }
    if (!window.htmx) { window.location.reload(); return; }
    const workspace = document.getElementById("plan-workspace");
    const key = !wholeOwedSeq && workspace ? workspace.dataset.key : "";
    const url = key ? fragmentUrl + (fragmentUrl.includes("?") ? "&" : "?") + "keep=" + encodeURIComponent(key) : fragmentUrl;
    htmx.ajax("GET", url, {source: "#run-main", target: "#run-main", swap: "innerHTML"});
  }
  // The workspace and the timeline the page keeps through a light refresh: out of the page
  // while htmx swaps the rest (so that htmx neither cleans them up nor throws the graph away),
  // then put back in their slots. The timeline is fetched again where it can be seen.
  let keptParts = null;
  function takeOutWorkspace(e) {
    const key = e.detail.xhr.getResponseHeader("X-Workspace-Kept");
    if (!key) return true;
    const workspace = document.getElementById("plan-workspace");
    if (!workspace || workspace.dataset.key !== key) return false;
    keptParts = [workspace, document.getElementById("run-timeline")].filter(Boolean);
    for (const part of keptParts) part.remove();
    return true;
  }
  function putBackWorkspace() {
    const parts = keptParts;
    keptParts = null;
    if (!parts) return false;
    for (const part of parts) {
      const slot = document.getElementById(part.id);
      if (slot && slot.dataset.kept) slot.replaceWith(part);
    }
    refreshTimeline();
    return true;
  }
  // A refresh or a card fetch that comes back while something is pressed is set aside and
  // asked for again once it is let go (presses.js: the pressed button must stay in the page).
  let heldMain = false;
  function holdRefresh(refreshed, e) {
    if (refreshed === "run-main") heldMain = true;
    else {
      const asked = new URL(e.detail.requestConfig.path, window.location.href).searchParams.get("steps");
      if (asked) for (const stepId of asked.split(",")) dirtyCards.add(stepId);
    }
    window.presses.afterRelease(refreshHeld);
  }
  function refreshHeld() {
    if (heldMain) { heldMain = false; refreshMain(true); }
    if (dirtyCards.size && !cardTimer) cardTimer = setTimeout(fetchCards, 0);
  }

  // Noted at swap time, not when the refresh was asked for: typing goes on meanwhile.
  document.body.addEventListener("htmx:beforeSwap", (e) => {
    const refreshed = refreshOf(e);
    if (!refreshed) return;
    if (e.detail.xhr.changesBefore !== changesStarted) { e.detail.shouldSwap = false; return; }
    if (window.presses && window.presses.down) { e.detail.shouldSwap = false; holdRefresh(refreshed, e); return; }
    if (refreshed === "steps") {
      // Cards come back out of band: what a person has open or typed in one goes back into
      // its new card (htmx:oobAfterSwap), as a whole refresh does for the page.
      const steps = document.getElementById("steps");
      keptCards = steps ? noteParts(steps) : null;
      return;
    }
    if (refreshed !== "run-main") return;
    keepOpenParts();
    // The page's workspace changed since it asked (cannot happen while no change is on its
    // way, but nothing is lost by asking again): the whole fragment, then.
    if (!takeOutWorkspace(e)) { e.detail.shouldSwap = false; kept = null; refreshMain(); }
  });

  // A refresh that the socket triggers must not fold away a form a person opened, nor lose
  // what they typed: note both before the swap and put them back after it.
  let kept = null;
  let keptCards = null;  // the same, for the cards a card fetch brings again
  function partKey(el) {
    const owner = el.parentElement && el.parentElement.closest("[id]");
    // Without htmx's own classes, which come and go: an editor whose forms were on their way
    // (`htmx-request`) was looked for by that class in the new render and folded shut.
    const classes = Array.from(el.classList).filter((name) => !name.startsWith("htmx-")).join(" ");
    return (owner ? owner.id : "") + "|" + classes + "|" + (el.getAttribute("name") || el.id || "");
  }
  function keepOpenParts() {
    const main = document.getElementById("run-main");
    kept = main ? noteParts(main) : null;
  }
  // What a person has open, unfolded, typed and focused in `root`, by partKey.
  function noteParts(root) {
    const was = {open: new Set(), values: new Map(), focus: null, unfolded: []};
    root.querySelectorAll("details[open]").forEach((d) => was.open.add(partKey(d)));
    // Unfolded, or unfolding (its rest on its way: a second refresh can come meanwhile).
    root.querySelectorAll(".show-more").forEach((more) => {
      if (more.loading || more.getAttribute("aria-expanded") === "true") was.unfolded.push(more.getAttribute("aria-controls"));
    });
    root.querySelectorAll("textarea, input[type=text], input[type=number]").forEach((f) => {
      if (f.value !== f.defaultValue) was.values.set(partKey(f), f.value);
    });
    const active = document.activeElement;
    if (active && root.contains(active)) {
      was.focus = partKey(active);
      // A step in the graph has focus: the graph is mounted afresh, so its button is new.
      if (active.classList.contains("plan-graph-step")) was.focusStep = active.dataset.stepId;
    }
    return was;
  }
  function restoreOpenParts() {
    const main = document.getElementById("run-main");
    if (!main || !kept) return;
    const was = kept;
    kept = null;
    settleOpen = was.open;
    restoreParts(main, was);
  }
  // htmx settles an element that has an id by giving it the new render's attributes a moment
  // after the swap: a part with an id opened again at the swap (the estimate, the usage, the
  // run's facts) folded back. Opened again once settled; a fetch still on its way is not
  // asked for twice (formsReady).
  let settleOpen = null;
  document.body.addEventListener("htmx:afterSettle", (e) => {
    if (!(e.detail.target && e.detail.target.id === "run-main") || !settleOpen) return;
    const open = settleOpen;
    settleOpen = null;
    e.detail.target.querySelectorAll("details[id]").forEach((d) => {
      if (!d.open && open.has(partKey(d))) d.open = true;
    });
  });
  function restoreParts(root, was) {
    const loading = [];
    root.querySelectorAll("details").forEach((d) => {
      if (!was.open.has(partKey(d))) return;
      d.open = true;
      if (d.matches(FETCHED_PARTS)) loading.push(formsReady(d));
    });
    // An output or result being read stays unfolded: its rest is fetched again.
    for (const id of was.unfolded) {
      const more = root.querySelector(`.show-more[aria-controls="${CSS.escape(id)}"]`);
      if (more) toggleFold(more, false);
    }
    restoreValues(root, was);
    // A step's editor or "Retry or fork" fetches its forms again: what was typed in them goes
    // back once they come.
    if (loading.length) Promise.all(loading).then(() => restoreValues(root, was));
  }
  // Each value and the focus go back once, so a second pass cannot undo typing since the first.
  function restoreValues(root, was) {
    root.querySelectorAll("textarea, input[type=text], input[type=number]").forEach((f) => {
      const key = partKey(f);
      if (was.values.has(key)) { f.value = was.values.get(key); was.values.delete(key); }
      if (was.focus === key) { f.focus(); was.focus = null; }
    });
  }
  document.body.addEventListener("htmx:afterSwap", (e) => {
    if (!(e.detail.target && e.detail.target.id === "run-main")) return;
    // Only after a refresh: the answer to a person's own change shows its own outcome.
    const focusedStep = kept && kept.focusStep;
    const change = !(e.detail.requestConfig && e.detail.requestConfig.verb === "get");
    const previousSeq = renderedSeq;
    if (putBackWorkspace()) {
      // The fragment is as of its header's event, the cards as of the events the socket has
      // brought: one it has not brought yet is still to be applied to them when it comes.
      readRenderedSeq();
      renderedSeq = Math.min(renderedSeq, Math.max(previousSeq, lastSeq));
    } else {
      readRenderedSeq();
      if (renderedSeq >= wholeOwedSeq) wholeOwedSeq = 0;
    }
    if (!change) restoreOpenParts();
    else kept = null;
    mountGraph();
    watchTimeline();
    reopenStep();
    for (const stepId of Object.keys(liveText)) showLiveText(stepId);
    for (const stepId of Object.keys(seenStatus)) reapplyStatus(stepId);
    countFinished();
    if (change) restoreEdited();
    else if (focusedStep && graph) graph.focusStep(focusedStep);
  });

  // The cards an event changed are fetched again, a few at a time, and come back out of band
  // from the same template the page was first rendered with.
  const dirtyCards = new Set();
  let dirtySeq = 0;  // the newest event that made a card dirty
  let cardTimer = null;
  function refreshCard(stepId) {
    if (!stepId) return;
    dirtyCards.add(stepId);
    dirtySeq = Math.max(dirtySeq, lastSeq);
    if (!cardTimer) cardTimer = setTimeout(fetchCards, 120);
  }
  // The timeline follows the steps, a few times a second at most, and only where it can be
  // seen: out of sight (scrolled away, or the tab hidden) it is marked stale and fetched when
  // it comes back. Each fetch waits at least twice as long as the last took. A 1,000-step
  // run's timeline is 0.6 MB and 0.2 s of the server's time: fetched three times a second
  // whether or not anyone looked, one person watching took most of a core of the server.
  let timelineTimer = null;
  let timelineStale = false;
  let timelineCostMs = 0;
  let timelineSeen = true;  // until the observer says otherwise
  let timelineWatched = null;
  const timelineObserver = "IntersectionObserver" in window ? new IntersectionObserver((entries) => {
    for (const entry of entries) if (entry.target === timelineWatched) timelineSeen = entry.isIntersecting;
    catchUpTimeline();
  }, {rootMargin: "200px"}) : null;
  // The section is swapped whole (out of band, or with #run-main): watch the one in the page.
  function watchTimeline() {
    const el = document.getElementById("run-timeline");
    if (!timelineObserver || el === timelineWatched) return;
    if (timelineWatched) timelineObserver.unobserve(timelineWatched);
    timelineWatched = el;
    if (el) timelineObserver.observe(el);
  }
  function catchUpTimeline() {
    if (timelineStale) refreshTimeline();
  }
  document.addEventListener("visibilitychange", catchUpTimeline);
  // Stale until a fetch goes out: what changes while one is on its way is fetched after it.
  function refreshTimeline() {
    if (!window.htmx || !page.dataset.timelineUrl) return;
    timelineStale = true;
    if (timelineTimer || timelineHeld || !timelineSeen || document.hidden) return;
    timelineTimer = setTimeout(() => {
      timelineStale = false;
      const began = performance.now();
      const done = () => {
        timelineCostMs = performance.now() - began;
        timelineTimer = null;
        watchTimeline();
        catchUpTimeline();
      };
      htmx.ajax("GET", page.dataset.timelineUrl, {source: "#timeline-requests", target: "#run-timeline", swap: "none"})
        .then(done, done);
    }, Math.max(300, 2 * timelineCostMs));
  }
  // The timeline holds the report's links: one swapped in while a person presses one took the
  // click with it (presses.js). One that comes back meanwhile is fetched again once it is let
  // go, and none goes out before.
  let timelineHeld = false;
  function holdTimeline() {
    timelineStale = true;
    timelineHeld = true;
    window.presses.afterRelease(releaseTimeline);
  }
  function releaseTimeline() {
    timelineHeld = false;
    catchUpTimeline();
  }
  document.body.addEventListener("htmx:beforeSwap", (e) => {
    if (!(e.detail.target && e.detail.target.id === "run-timeline") || !(window.presses && window.presses.down)) return;
    e.detail.shouldSwap = false;
    holdTimeline();
  });
  function fetchCards() {
    cardTimer = null;
    if (!dirtyCards.size || !window.htmx || changesInFlight > 0) return;
    // No plan on the page yet (a run still planning): the cards come with the whole render.
    if (!document.getElementById("steps")) { dirtyCards.clear(); return; }
    const ids = Array.from(dirtyCards);
    dirtyCards.clear();
    htmx.ajax("GET", page.dataset.cardsUrl + "?steps=" + encodeURIComponent(ids.join(",")), {source: "#cards-requests", target: "#steps", swap: "none"});
  }
  document.body.addEventListener("htmx:oobAfterSwap", (e) => {
    // The event fires on the card swapped in; its detail.target is the card it replaced, no
    // longer in the page (an open card refreshed while its run went on lost its panel).
    const card = e.target;
    if (!card || !card.dataset || !card.dataset.stepId) return;
    if (card.dataset.stepId === openStepId) card.dataset.open = "yes";
    if (keptCards) restoreParts(card, keptCards);
    showLiveText(card.dataset.stepId);
    reapplyStatus(card.dataset.stepId);
  });
  function reapplyStatus(stepId) {
    const card = stepCard(stepId), status = seenStatus[stepId];
    if (card && status && (statusRank[card.dataset.status] || 0) < statusRank[status]) setStepStatus(stepId, status);
  }

  // The latest status of each step seen on the socket, re-applied after a fragment swap
  // in case the server rendered the fragment just before that event was committed.
  const seenStatus = {};
  // From core.status.STEP_PROGRESS, rendered into the page: the one list of step statuses.
  const statusRank = JSON.parse(document.getElementById("step-progress").textContent);
  const finished = (status) => statusRank[status] === Math.max(...Object.values(statusRank));

  function setStepStatus(stepId, status) {
    seenStatus[stepId] = status;
    const card = document.getElementById("step-" + stepId);
    if (card) {
      card.dataset.status = status;
      const badge = card.querySelector(".step-status");
      badge.className = "badge status-" + status + " step-status";
      badge.textContent = status.replace(/_/g, " ");
    }
    if (graph) graph.setStatus(stepId, status);
    countFinished();
  }

  function stepCard(stepId) { return document.getElementById("step-" + stepId); }

  function money(usd) { return "$" + (usd > 0 && usd < 1 ? usd.toFixed(4) : usd.toFixed(2)); }

  // Text a model is writing right now, per step; kept here so a fragment swap does not lose it.
  const liveText = {};
  function showLiveText(stepId) {
    const card = stepCard(stepId);
    const live = liveText[stepId];
    if (!card || !live) return;
    const pre = card.querySelector(".step-live");
    if (!pre) return;
    pre.textContent = live.parts.join("\n\n");
    pre.hidden = false;
    pre.scrollTop = pre.scrollHeight;
  }
  function addLiveText(msg) {
    const live = liveText[msg.step_id] || (liveText[msg.step_id] = {iteration: 0, parts: []});
    if (msg.iteration < live.iteration) return;  // a late piece of an earlier call
    // Each model call of the step writes its own paragraph.
    if (msg.iteration > live.iteration) { live.iteration = msg.iteration; live.parts.push(""); }
    const current = live.parts[live.parts.length - 1];
    // Offsets let a snapshot and the pieces after it join without a gap or a repeat.
    if (msg.offset + msg.text.length <= current.length) return;
    live.parts[live.parts.length - 1] = current.slice(0, msg.offset) + msg.text;
    showLiveText(msg.step_id);
  }
  function endLiveText(stepId) {
    delete liveText[stepId];
    const card = stepCard(stepId);
    const pre = card && card.querySelector(".step-live");
    if (pre) { pre.hidden = true; pre.textContent = ""; }
  }

  // A model call adds to the run's totals on the page without re-rendering it.
  function addCall(ev) {
    const p = ev.payload || {};
    const header = document.getElementById("run-header");
    if (!header) return;
    const t = header.dataset;
    t.calls = (parseInt(t.calls || "0", 10) + 1).toString();
    t.tokensIn = (parseInt(t.tokensIn || "0", 10) + p.input_tokens).toString();
    t.tokensOut = (parseInt(t.tokensOut || "0", 10) + p.output_tokens).toString();
    if (p.cost_usd !== null) t.cost = (parseFloat(t.cost || "0") + parseFloat(p.cost_usd)).toString();
    const set = (id, text) => { const el = document.getElementById(id); if (el) el.textContent = text; };
    const n = (v) => parseInt(v, 10).toLocaleString("en-US");
    const pct = (used, limit) => (Math.round(used * 1000 / limit) / 10).toString();
    const tokens = n(t.tokensIn) + " / " + n(t.tokensOut);
    const cost = money(parseFloat(t.cost || "0"));
    set("run-calls", t.calls);
    set("run-tokens", tokens);
    set("run-cost", cost);
    // The usage section's own line, folded or not, as its template writes it.
    const calls = parseInt(t.calls, 10);
    set("usage-totals", calls + " call" + (calls === 1 ? "" : "s") + ", " + tokens + " tokens, " + cost);
    if (t.budgetTokens) set("budget-tokens-pct", pct(parseInt(t.tokensIn, 10) + parseInt(t.tokensOut, 10), parseInt(t.budgetTokens, 10)));
    if (t.budgetUsd) set("budget-usd-pct", pct(parseFloat(t.cost || "0"), parseFloat(t.budgetUsd)));
  }

  function describe(ev) {
    const p = ev.payload || {};
    switch (ev.type) {
      case "run.paused": return "paused by " + p.by + ": no new step starts";
      case "run.resumed": return "resumed by " + p.by;
      case "baseline.started": return "a single agent re-runs the task of run " + p.of + " (up to " + p.max_iterations + " model calls)";
      case "run.status": return "run is " + p.status.replace(/_/g, " ") + (p.error ? ": " + p.error : "");
      case "plan.version": return "plan version " + p.number + " by the " + p.author + (p.model ? " (" + p.model + ")" : "") + ", " + p.steps + " steps" + (p.note ? ": " + p.note : "");
      case "plan.revision_requested": return "revision requested: " + p.note;
      case "plan.revision_ready": return "the planner's revision is " + p.state + (p.error ? ": " + p.error : "");
      case "plan.revision_discarded": return "the planner's revision was discarded";
      case "plan.invalid": return "plan attempt " + p.attempt + " was invalid: " + p.errors.join("; ");
      case "plan.approved": return "plan version " + p.number + " approved";
      case "step.queued": return "queued";
      case "step.started": return "started (attempt " + p.attempt + ") on " + p.worker;
      case "model.call":
        if (p.error) return p.role + " call to " + p.model + " failed after " + p.latency_ms + " ms: " + p.error;
        return p.role + " call to " + p.model + ": " + p.input_tokens + " tokens in" +
          (p.cache_read_tokens ? " (" + p.cache_read_tokens + " cached)" : "") + ", " + p.output_tokens + " out, " +
          (p.cost_usd === null ? "unpriced" : money(parseFloat(p.cost_usd))) + ", " + p.latency_ms + " ms";
      case "step.tool_call": return "calls " + p.tool + " " + JSON.stringify(p.arguments) + (p.recognised_in_text ? " (recognised in text)" : "");
      case "step.tool_result": return (p.is_error ? "tool error from " : "result from ") + p.tool + ": " + p.content.slice(0, 300);
      case "step.succeeded": return "succeeded in " + (p.duration_s || 0).toFixed(2) + " s";
      case "step.failed": return "failed: " + p.error;
      case "step.skipped": return "skipped: " + p.reason;
      case "step.waiting": return "waits for approval of " + p.tool;
      case "budget.waiting": return "waits for " + p.calls + " call" + (p.calls === 1 ? "" : "s") + " in flight to be counted: beside what " + (p.calls === 1 ? "it" : "they") + " may take (" + p.held_tokens.toLocaleString("en") + " tokens), the budget may not pay for this call's answer";
      case "step.worker_lost": return "its worker (" + p.worker + ") stopped answering; another takes it over";
      case "handover.delayed": return "the task queue did not take the " + p.task.replace(/_/g, " ") + " (" + p.error + "): sent again for up to " + p.retry_s + " s, then by the sweep";
      case "step.retried": return "run again by " + p.by + (p.edited ? " with an edited instruction" : "") +
        (p.again.length > 1 ? ", and the steps after it: " + p.again.slice(1).join(", ") : "");
      case "step.reused": return "output reused from run " + p.from_run + ", not run again";
      case "plan.replanning": return "failed; the planner revises what is left: " + p.error;
      case "plan.replan_proposed": return "a re-plan waits for you" + (p.gated && p.gated.length ? " (it adds irreversible steps: " + p.gated.join(", ") + ")" : "");
      case "plan.replan_cap": return "no more re-plans: " + p.replans + " of " + p.cap + " used";
      case "approval.requested":
        if (p.kind === "outcome") return "the outcome of " + p.tool + " is unknown: a person decides " + JSON.stringify(p.arguments);
        return "asks to call " + p.tool + " (" + p.effect + ") " + JSON.stringify(p.arguments);
      case "approval.decided": return p.tool + " " + (p.resolution ? p.resolution : p.state) + " by " + p.by + (p.edited ? " with edited arguments" : "") + (p.reason ? ": " + p.reason : "");
      case "approval.withdrawn": return p.count + " pending approval" + (p.count === 1 ? "" : "s") + " withdrawn: " + p.reason;
      case "tool.performing": return "performing " + p.tool + ", authorized by " + p.authorized_by + " (key " + p.key + ")";
      case "tool.receipt": return p.tool + (p.is_error ? " failed; receipt stored" : " performed; receipt stored");
      case "file.written": return "wrote " + p.path + " (" + p.size + " bytes)";
      case "file.deleted": return "deleted " + p.path;
      case "tool.unknown": return "the outcome of " + p.tool + " is unknown: its worker stopped during the call; not repeated";
      default: return ev.type;
    }
  }

  // The log shows the latest events: on load, the page's socket replays only the last page of
  // them before the render (the rest are in the render already), and a live log that grows
  // past a few pages drops its oldest lines. Earlier ones come a page at a time on asking.
  // At 1,000 steps the whole log was 5,000 events replayed on every load.
  const LOG_PAGE = parseInt(page.dataset.logPage || "300", 10);
  let oldestLogged = 0;  // the seq of the oldest event in the log, 0 while none
  let earlierAsked = false;  // a person went back: nothing is dropped from then on
  function logRow(ev) {
    const li = document.createElement("li");
    li.className = "ev ev-" + ev.type.replace(/\./g, "-");
    li.dataset.seq = ev.seq;
    const time = document.createElement("time");
    time.textContent = new Date(ev.at).toLocaleTimeString();
    const who = document.createElement("span");
    who.className = "ev-step";
    who.textContent = ev.step_id || "run";
    const what = document.createElement("span");
    what.className = "ev-text";
    what.textContent = describe(ev);
    li.append(time, who, what);
    return li;
  }
  function appendLog(ev) {
    log.prepend(logRow(ev));
    if (!oldestLogged) oldestLogged = ev.seq;
    // Counted at no cost first (its children are the rows and at most one more line).
    if (earlierAsked || log.childElementCount <= 3 * LOG_PAGE) return;
    const rows = log.querySelectorAll(":scope > li.ev");
    if (rows.length <= 3 * LOG_PAGE) return;
    for (let i = rows.length - 1; i >= 2 * LOG_PAGE; i--) rows[i].remove();
    oldestLogged = parseInt(rows[2 * LOG_PAGE - 1].dataset.seq, 10);
    offerEarlier();
  }
  // The log's last line, while events before its oldest one exist.
  function offerEarlier() {
    if (document.getElementById("log-earlier") || oldestLogged <= 1) return;
    const li = document.createElement("li");
    li.className = "log-earlier";
    const button = document.createElement("button");
    button.type = "button";
    button.id = "log-earlier";
    button.textContent = "Earlier events";
    button.addEventListener("click", () => showEarlier(button));
    li.append(button);
    log.append(li);
  }
  function showEarlier(button) {
    earlierAsked = true;
    button.disabled = true;
    fetch(page.dataset.logUrl + "?before=" + oldestLogged, {headers: {"Accept": "application/json"}})
      .then((response) => response.ok ? response.json() : Promise.reject(new Error(response.status)))
      .then((data) => {
        const here = button.closest("li");
        for (const ev of data.events) {  // newest first, as the log reads
          here.before(logRow(ev));
          oldestLogged = ev.seq;
        }
        if (data.more) button.disabled = false;
        else here.remove();
      })
      .catch(() => { button.disabled = false; button.textContent = "Earlier events (could not load them: try again)"; });
  }

  function apply(ev) {
    if (ev.seq <= lastSeq) return;
    lastSeq = ev.seq;
    appendLog(ev);
    if (ev.seq <= renderedSeq) return;
    if (ev.type.startsWith("step.")) refreshTimeline();
    switch (ev.type) {
      case "step.queued": setStepStatus(ev.step_id, "queued"); break;
      case "step.started": setStepStatus(ev.step_id, "running"); break;
      case "model.call": addCall(ev); break;
      case "step.succeeded":
      case "step.failed":
      case "step.skipped":
        setStepStatus(ev.step_id, ev.type.slice("step.".length));
        endLiveText(ev.step_id);
        refreshCard(ev.step_id);
        break;
      case "step.waiting":
        setStepStatus(ev.step_id, "waiting");
        endLiveText(ev.step_id);
        refreshCard(ev.step_id);
        refreshMain(true);
        break;
      // What these change in the plan's workspace is their step's card.
      case "approval.requested":
      case "approval.decided":
      case "approval.withdrawn":
      case "tool.receipt":
      case "tool.unknown":
      case "file.written":
      case "file.deleted":
        refreshCard(ev.step_id);
        refreshMain(true);
        break;
      case "plan.replanning":
      case "plan.replan_proposed":
        refreshMain();
        break;
      case "step.tool_call":
      case "step.tool_result":
      case "step.worker_lost":
      case "step.reused":
        refreshCard(ev.step_id);
        break;
      case "step.retried":
        // These steps start over: what the socket said of their last attempt is history.
        for (const stepId of ev.payload.again) { delete seenStatus[stepId]; endLiveText(stepId); }
        refreshMain();
        break;
      case "run.paused":
      case "run.resumed":
      case "plan.version":
      case "plan.approved":
      case "plan.revision_ready":
      case "run.status":
        refreshMain();
        break;
    }
  }

  // The socket brings the live text of the open step only (text.follow): it is shown nowhere
  // else, and it is most of what a run sends.
  let socket = null;
  let followed = null;
  function follow() {
    if (!socket || socket.readyState !== WebSocket.OPEN || openStepId === followed) return;
    // Its text stops coming: opened again, it starts afresh from the text so far.
    if (followed) endLiveText(followed);
    followed = openStepId;
    socket.send(JSON.stringify({type: "text.follow", steps: followed ? [followed] : []}));
  }

  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    // batch=1: events that arrive together come in one frame ({"type": "batch", "messages": [...]});
    // text=: no step's live text until the page follows one.
    const ws = new WebSocket(scheme + window.location.host + "/ws/runs/" + runId + "/?after=" + lastSeq + "&batch=1&text=");
    socket = ws;
    followed = null;
    ws.onopen = () => { retryMs = 500; wsState.textContent = "live"; wsState.className = "ws-state live"; follow(); };
    const handle = (data) => {
      if (data.type === "event") apply(data.event);
      else if (data.type === "text" && !finished(seenStatus[data.step_id])) addLiveText(data);
    };
    ws.onmessage = (msg) => {
      let data;
      try { data = JSON.parse(msg.data); } catch (e) { return; }
      if (data.type === "batch" && Array.isArray(data.messages)) data.messages.forEach(handle);
      else handle(data);
    };
    ws.onclose = (e) => {
      if (e.code === 4401 || e.code === 4404) {
        stopped = true;
        wsState.textContent = e.code === 4401 ? "not logged in" : "run not found";
        wsState.className = "ws-state dead";
        return;
      }
      wsState.textContent = "reconnecting…"; wsState.className = "ws-state";
      if (!stopped) setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 10000);
    };
  }

  // A step's edit forms come when its editor first opens (views.runs.step_editor), and its
  // retry and fork forms when "Retry or fork" does (views.retries.step_again): sent inside every
  // card, the edit forms were three quarters of a 1,000-step plan's page. Resolves once they
  // are in; until they come, the part holds a link to them on a page of their own. Settled at
  // once (settle:0ms), so the forms are htmx's before anyone can press them. The estimate's
  // table of each step's figures (views.report.run_estimate_part) comes the same way, afresh
  // at each opening: it has no form, so its link stays.
  const FETCHED_PARTS = "details.step-editor, details.step-again, details#run-estimate";
  function formsReady(part) {
    const body = part.querySelector(":scope > [data-src]");
    if (!body) return Promise.resolve();
    if (!part.loading) {
      const done = () => { part.loading = null; };
      part.loading = htmx.ajax("GET", body.dataset.src, {source: part, target: body, swap: "innerHTML settle:0ms"})
        .then(() => { if (body.querySelector("form, .locked-reason")) body.removeAttribute("data-src"); done(); }, done);
    }
    return part.loading;
  }
  // `toggle` does not bubble: caught on its way down.
  document.addEventListener("toggle", (e) => {
    const part = e.target;
    if (part instanceof HTMLDetailsElement && part.open && part.matches(FETCHED_PARTS)) formsReady(part);
  }, true);

  readRenderedSeq();
  // Events up to the render's are in the page already: the log replays the last page of them.
  lastSeq = Math.max(0, renderedSeq - LOG_PAGE);
  if (lastSeq) { oldestLogged = lastSeq + 1; offerEarlier(); }  // the replay brings the rest
  mountGraph();
  watchTimeline();
  const asked = window.location.hash.startsWith("#step-") ? decodeURIComponent(window.location.hash.slice("#step-".length)) : remembered();
  if (asked) openStep(asked, {focusPanel: false});
  connect();
  // While the run executes, running bars grow between events too.
  setInterval(() => {
    const header = document.getElementById("run-header");
    if (header && header.dataset.status === "running") refreshTimeline();
  }, 5000);
})();

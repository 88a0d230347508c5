// The header's pending-approvals badge, kept current over a WebSocket on every page; on the
// inbox page, the list is refreshed too.
(function () {
  "use strict";
  const badge = document.getElementById("approvals-badge");
  if (!badge) return;
  let retryMs = 1000;
  let last = parseInt(badge.dataset.count || "0", 10);

  function show(count) {
    badge.textContent = String(count);
    badge.dataset.count = String(count);
    badge.hidden = count === 0;
    if (count !== last) {
      last = count;
      refreshList();
      document.body.dispatchEvent(new CustomEvent("approvals:changed", {detail: {pending: count}}));
    }
  }

  function refreshList() {
    const list = document.getElementById("inbox-list");
    // Everything but the outcome on top: the notice of a decision made on this page must not
    // vanish when the count that decision changed comes back over the socket. Its inside only:
    // a refresh asked for while another is on its way waits for it (htmx sends them one at a
    // time), then swaps into the element it was aimed at, which must still be the page's.
    if (list && window.htmx) {
      htmx.ajax("GET", list.dataset.url, {target: "#inbox-live", swap: "innerHTML", select: "#inbox-live > *"});
    }
  }
  // A list that comes back while a button is pressed would take the button out of the page
  // (presses.js): it is asked for again once the button is let go.
  let held = false;
  document.body.addEventListener("htmx:beforeSwap", (e) => {
    if (!(e.detail.target && e.detail.target.id === "inbox-live") || !window.presses || !window.presses.down) return;
    e.detail.shouldSwap = false;
    if (held) return;
    held = true;
    window.presses.afterRelease(() => { held = false; refreshList(); });
  });

  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    const ws = new WebSocket(scheme + window.location.host + "/ws/inbox/");
    ws.onopen = () => { retryMs = 1000; };
    ws.onmessage = (msg) => {
      let data;
      try { data = JSON.parse(msg.data); } catch (e) { return; }
      if (data.type === "approvals") show(data.pending);
    };
    ws.onclose = (e) => {
      if (e.code === 4401) return;
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 15000);
    };
  }
  connect();
})();

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
  // (presses.js): it is asked for again once the button is let go. Otherwise what a person
  // ticked and typed in the list, outside the decision forms a refresh keeps whole
  // (hx-preserve), goes back into the new list, and so does the focus: through the live
  // refresh of its inside, and through the whole list that their own decision (or a filter)
  // brings back. Not what the form that was sent holds: a bulk decision's ticks and reason
  // are spent.
  let kept = null;
  document.body.addEventListener("htmx:beforeSwap", (e) => {
    const list = e.detail.target;
    if (!(list && (list.id === "inbox-live" || list.id === "inbox-list"))) return;
    if (list.id === "inbox-live" && window.presses && window.presses.down) {
      e.detail.shouldSwap = false;
      window.presses.afterRelease(refreshList);
      return;
    }
    const sent = e.detail.requestConfig.elt;
    kept = {list: list.id, values: new Map(), focus: null};
    for (const field of fieldsOf(list)) {
      if (field.form && field.form === sent) continue;
      if (field.type === "checkbox" || field.type === "radio") {
        if (field.checked !== field.defaultChecked) kept.values.set(fieldKey(field), field.checked);
      } else if (field.value !== field.defaultValue) kept.values.set(fieldKey(field), field.value);
    }
    const active = document.activeElement;
    if (active && list.contains(active) && !active.closest("[hx-preserve]")) kept.focus = fieldKey(active);
  });
  // Heard on what was swapped in: the live part, or the new whole list that replaced the old.
  document.body.addEventListener("htmx:afterSwap", (e) => {
    if (!kept || e.target.id !== kept.list) return;
    const was = kept;
    kept = null;
    for (const field of fieldsOf(e.target)) {
      const key = fieldKey(field);
      if (was.values.has(key)) {
        if (field.type === "checkbox" || field.type === "radio") field.checked = was.values.get(key);
        else field.value = was.values.get(key);
      }
      if (was.focus === key) field.focus();
    }
  });
  function fieldsOf(root) {
    return Array.from(root.querySelectorAll("input, textarea")).filter(
      (field) => field.type !== "hidden" && !field.closest("[hx-preserve]"));
  }
  // A request's tick is its card's (by id), the bulk reason its form's.
  function fieldKey(field) {
    const owner = field.closest("[id]");
    const own = field.type === "checkbox" || field.type === "radio" ? field.value : "";
    return (owner ? owner.id : "") + "|" + (field.name || field.id) + "|" + own;
  }

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

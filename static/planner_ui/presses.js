// A click is a press and a release, a tenth of a second apart for a person. A live refresh
// swapped in between takes the pressed button out of the page, and the browser sends the click
// nowhere (seen in CI: Resume, clicked as a refresh of the run page landed, sent no request).
// The pages' scripts ask `presses.down` before they swap a refresh in, and hold it back until
// `presses.afterRelease` calls them: after the release, so after the click has gone out, and
// once however often the same function was handed over meanwhile.
(function () {
  "use strict";
  let pressing = false;
  let waiting = new Set();
  function release() {
    if (!pressing) return;
    pressing = false;
    setTimeout(() => {
      if (pressing) return;  // pressed again meanwhile: held until that release
      const due = waiting;
      waiting = new Set();
      for (const fn of due) fn();
    }, 0);
  }
  // The main button only: a click is made with it, and a right button's release can go to the
  // context menu instead, which would leave the page holding its refreshes until the next press.
  document.addEventListener("pointerdown", (e) => { if (e.button === 0) pressing = true; }, true);
  document.addEventListener("pointerup", release, true);
  document.addEventListener("pointercancel", release, true);
  window.addEventListener("blur", release);
  // The space bar clicks a button as it comes up (Enter clicks as it goes down).
  document.addEventListener("keydown", (e) => {
    if (e.key === " " && e.target.closest && e.target.closest("button, summary, input[type=submit], input[type=checkbox], input[type=radio]")) pressing = true;
  }, true);
  document.addEventListener("keyup", (e) => { if (e.key === " ") release(); }, true);
  window.presses = {
    get down() { return pressing; },
    afterRelease(fn) {
      if (pressing) waiting.add(fn);
      else setTimeout(fn, 0);
    },
  };

  // A poll (hx-trigger "every 2s": an experiment's results, the local models' list) has no
  // page script to hold its answer: it is held here. Its element, not swapped, polls on, so
  // its next poll would bring even the answer that ends the polling; it asks at once after the
  // release instead, not a poll's interval later.
  const heldPolls = new Set();
  document.body.addEventListener("htmx:beforeSwap", (e) => {
    const polled = e.detail.elt;
    if (!pressing || !polled || !/^\s*every\s/.test(polled.getAttribute("hx-trigger") || "")) return;
    e.detail.shouldSwap = false;
    heldPolls.add(polled);
    window.presses.afterRelease(pollHeld);
  });
  function pollHeld() {
    for (const polled of heldPolls) {
      // Gone with the click's own answer (a button that replaced its panel): nothing to ask.
      if (document.body.contains(polled)) htmx.ajax("GET", polled.getAttribute("hx-get"), {source: polled});
    }
    heldPolls.clear();
  }
})();

// The API tokens page: copy a token just made to the clipboard, and say whether it worked.
(function () {
  "use strict";
  const button = document.getElementById("copy-token");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  const state = document.getElementById("copy-token-state");

  function selectToken() {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  button.addEventListener("click", async () => {
    const text = source.textContent.trim();
    try {
      // Only on https or localhost; elsewhere the older command still copies a selection.
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
      } else {
        selectToken();
        if (!document.execCommand("copy")) throw new Error("copy refused");
      }
      state.textContent = "Copied.";
    } catch (e) {
      selectToken();
      state.textContent = "Could not copy: the token is selected, press Ctrl+C (⌘C on a Mac).";
    }
  });
})();

// Progressive enhancement: a Copy button beside every SHA-256. Without JavaScript (or a
// clipboard) the digests stay plain, selectable text.
(function () {
  "use strict";
  if (!window.isSecureContext || !navigator.clipboard) return;
  document.querySelectorAll("code[data-sha256]").forEach(function (code) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    var file = code.getAttribute("data-file");
    button.setAttribute("aria-label", "Copy the SHA-256 of " + file);
    button.setAttribute("aria-live", "polite");
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(code.textContent.trim()).then(
        function () { button.textContent = "Copied"; button.setAttribute("aria-label", "Copied the SHA-256 of " + file); },
        function () { button.textContent = "Select it to copy"; button.removeAttribute("aria-label"); }
      );
    });
    code.insertAdjacentElement("afterend", button);
  });
})();

// thoughtline ui: expand or collapse every reasoning block of a session at once, and open the
// reasoning of a turn linked to by its #turn-N anchor. No data is fetched; nothing is sent.
"use strict";
(function () {
  function setAll(open) {
    document.querySelectorAll("details.reasoning").forEach(function (d) { d.open = open; });
  }
  function openLinkedTurn() {
    var turn = location.hash && document.getElementById(location.hash.slice(1));
    if (turn) {
      turn.querySelectorAll("details.reasoning").forEach(function (d) { d.open = true; });
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    var expand = document.getElementById("expand-all");
    var collapse = document.getElementById("collapse-all");
    if (expand) { expand.addEventListener("click", function () { setAll(true); }); }
    if (collapse) { collapse.addEventListener("click", function () { setAll(false); }); }
    openLinkedTurn();
    window.addEventListener("hashchange", openLinkedTurn);
  });
})();

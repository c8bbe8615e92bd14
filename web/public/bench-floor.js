// make bench-ui's cold floor (web/e2e/bench-ui.mjs): the smallest page that
// shows something from the same JSON the app's screen shows. It fetches
// /api/v1/rm + ?api= with the signed-in key (as preload.js would), parses
// it, and paints one element from it. No framework, no app code: what any
// web app served from this server pays for a cold navigation to that data.
(function () {
  var api = new URLSearchParams(location.search).get("api") || "/me";
  fetch("/api/v1/rm" + api, { headers: { Authorization: "Bearer " + localStorage.getItem("critic.apiKey") } })
    .then(function (r) {
      return r.json();
    })
    .then(function (data) {
      var p = document.createElement("p");
      p.id = "floor";
      p.textContent = data.steps ? data.steps.length + " steps: " + data.title : data.traces ? data.traces.length + " of " + data.total + " traces" : JSON.stringify(data).slice(0, 80);
      document.body.appendChild(p);
    });
})();

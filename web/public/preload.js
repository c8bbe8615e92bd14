// Starts the first screen's work while the app's bundle is still loading, so
// the network and the script work overlap (a plain script: it runs before
// the module bundle is evaluated). Three things:
//  - the current page's code: each page is its own chunk, and the build
//    lists each chunk's files in <meta name="critic-route-chunks">
//    (vite.config.ts); they are modulepreloaded here, beside the entry;
//  - ICU's warm-up, on another thread (warm-intl.js says why);
//  - the page's first API requests: the app takes these promises instead of
//    asking again; nothing else reads them.
(function () {
  var path = location.pathname;
  var trace = /^\/traces\/([0-9a-fA-F-]{36})$/.exec(path);
  // Which chunk each path opens (the names main.tsx gives its pages).
  var routes = [
    [/^\/(traces)?$/, "TracesPage"],
    [/^\/traces\/[^/]+$/, "TraceViewer"],
    [/^\/review$/, "ReviewPage"],
    [/^\/models$/, "ModelsPage"],
    [/^\/models\/compare$/, "ComparePage"],
    [/^\/models\/[^/]+$/, "ModelDetail"],
    [/^\/skills$/, "SkillsPage"],
    [/^\/skills\/[^/]+$/, "GepaRunPage"],
    [/^\/sql$/, "SqlPage"],
    [/^\/comparisons$/, "ComparisonsPage"],
    [/^\/criteria$/, "CriteriaPage"],
    [/^\/team$/, "TeamPage"],
  ];
  var meta = document.querySelector('meta[name="critic-route-chunks"]');
  var chunks = {};
  try {
    chunks = JSON.parse((meta && meta.getAttribute("content")) || "{}");
  } catch (e) {
    chunks = {};
  }
  // Modulepreloads the files of the chunk called name that no link names
  // yet; the app calls it too (PreloadPages: the pages one click away, marked
  // data-idle), so both read the one route map.
  var linked = {};
  window.__criticPreloadChunk = function (name, idle) {
    var files = chunks[name] || [];
    for (var j = 0; j < files.length; j++) {
      if (linked[files[j]]) continue;
      linked[files[j]] = true;
      var link = document.createElement("link");
      link.rel = "modulepreload";
      link.href = files[j];
      if (idle) link.setAttribute("data-idle", "");
      document.head.appendChild(link);
    }
  };
  for (var i = 0; i < routes.length; i++) {
    if (!routes[i][0].test(path)) continue;
    window.__criticPreloadChunk(routes[i][1], false);
    break;
  }
  try {
    new Worker("/warm-intl.js");
  } catch (e) {
    /* no workers: the first date formatted pays the warm-up instead */
  }

  var key = localStorage.getItem("critic.apiKey");
  if (!key || location.hash.indexOf("key=") >= 0) return;
  var get = function (p) {
    return fetch("/api/v1/rm" + p, { headers: { Authorization: "Bearer " + key } });
  };
  // Keys are the paths the app asks for, exactly.
  var pre = { key: key, "/me": get("/me") };
  if (trace) pre["/traces/" + trace[1]] = get("/traces/" + trace[1]);
  // The list's plain views: its first page, or ?page=N of the unfiltered list.
  var page = /^\?page=(\d{1,6})$/.exec(location.search);
  if ((path === "/traces" || path === "/") && (!location.search || page)) {
    var offset = page ? Number(page[1]) * 50 : 0;
    pre["/traces?limit=50&offset=" + offset] = get("/traces?limit=50&offset=" + offset);
  }
  window.__criticPreload = pre;
})();

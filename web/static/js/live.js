/* sewerwatch office: the Today page refreshes its live parts itself.
 * Every few seconds it fetches /today/live and replaces each [data-live] section, except a
 * section where someone is typing a note; a failed fetch says so on the page, with how old
 * what is shown has become. No library, nothing loaded from elsewhere. */
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || !window.fetch) { return; }
  var every = Math.max(1, parseFloat(live.getAttribute("data-refresh") || "2")) * 1000;
  var status = document.getElementById("live-status");
  var lost = document.getElementById("lost");
  var shownAt = parseFloat(live.getAttribute("data-generated") || "0") * 1000 || Date.now();
  var failing = false;
  var why = "";

  function clock(ms) {
    var d = new Date(ms);
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds());
  }

  function editing(section) {
    var a = document.activeElement;
    if (a && section.contains(a) && /^(TEXTAREA|INPUT|SELECT|BUTTON)$/.test(a.tagName)) { return true; }
    var fields = section.querySelectorAll("textarea");
    for (var i = 0; i < fields.length; i++) { if (fields[i].value.trim() !== "") { return true; } }
    return false;
  }

  function apply(html) {
    var tpl = document.createElement("template");
    tpl.innerHTML = html;
    var paused = false;
    var fresh = tpl.content.querySelectorAll("[data-live]");
    for (var i = 0; i < fresh.length; i++) {
      var key = fresh[i].getAttribute("data-live");
      var old = live.querySelector('[data-live="' + key + '"]');
      if (!old) { live.appendChild(fresh[i]); continue; }
      if (editing(old)) { paused = true; continue; }
      old.parentNode.replaceChild(fresh[i], old);
    }
    var gen = tpl.content.querySelector("[data-generated]");
    shownAt = gen ? parseFloat(gen.getAttribute("data-generated")) * 1000 : Date.now();
    status.textContent = "Updated " + clock(shownAt) + (paused ? " · open alerts not refreshed while you type a note" :
      " · refreshes every " + Math.round(every / 1000) + " s");
  }

  function age() {
    if (!failing) { return; }
    var s = Math.round((Date.now() - shownAt) / 1000);
    lost.hidden = false;
    lost.textContent = (why && why !== "Failed to fetch" ? why + ". " : "") + "No news from sewerwatch since " +
      clock(shownAt) + ": what this page shows is " + s + " s old. It keeps trying.";
  }

  function tick() {
    fetch(live.getAttribute("data-url") || "/today/live", {headers: {"X-Sewerwatch-Live": "1"}, credentials: "same-origin", cache: "no-store"})
      .then(function (r) {
        if (r.status === 401) {
          return r.json().then(function (j) {
            window.location.assign((live.getAttribute("data-login") || "/login") + "?next=%2F" +
                                   (j && j.why ? "&why=" + encodeURIComponent(j.why) : ""));
            return null;
          });
        }
        return r.text().then(function (html) {
          if (!r.ok && !/data-live=/.test(html)) {     // an error page, not the page's parts
            var tpl = document.createElement("template");
            tpl.innerHTML = html;
            var h = tpl.content.querySelector("h1");
            throw new Error(h ? h.textContent : "HTTP " + r.status);
          }
          return html;
        });
      })
      .then(function (html) {
        if (html === null) { return; }
        failing = false;
        why = "";
        lost.hidden = true;
        lost.textContent = "";
        apply(html);
      })
      .catch(function (err) { failing = true; why = err && err.message ? err.message : ""; age(); })
      .then(function () { window.setTimeout(tick, every); });
  }

  window.setInterval(age, 1000);
  window.setTimeout(tick, every);
})();

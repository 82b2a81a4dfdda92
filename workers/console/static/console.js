// council console: live updates by server-sent events. No build step, no inline script
// (the CSP allows scripts from the console's own files only).
//
// The page's <main data-events="URL"> names its event stream. Each `part` event carries
// JSON {part, digest, html}: the server-rendered (escaped) HTML of one [data-part]
// section. A section is replaced when its digest differs, except a [data-guard] section
// (the questions) in which the person has started answering: its "#<id>-changed"
// notice is shown instead, so no half-typed answer is lost.
(function () {
  "use strict";
  var main = document.querySelector("main[data-events]");
  var state = document.getElementById("live-state");

  function say(text, kind) {
    if (state) {
      state.textContent = text;
      state.className = "live-state " + (kind || "");
    }
  }

  if (!main || typeof window.EventSource === "undefined") {
    say("not live (reload to update)", "off");
    return;
  }

  function started(part) {
    var active = document.activeElement;
    if (active && active !== document.body && part.contains(active) &&
        /^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(active.tagName)) {
      return true;
    }
    var fields = part.querySelectorAll("input, textarea, select");
    for (var i = 0; i < fields.length; i++) {
      var f = fields[i];
      if (f.type === "hidden") { continue; }
      if (f.type === "radio" || f.type === "checkbox") {
        if (f.checked !== f.defaultChecked) { return true; }
      } else if (f.value !== f.defaultValue) {
        return true;
      }
    }
    return false;
  }

  function place(message) {
    var part = null;
    var parts = document.querySelectorAll("[data-part]");
    for (var i = 0; i < parts.length; i++) {
      if (parts[i].getAttribute("data-part") === message.part) { part = parts[i]; }
    }
    if (!part || part.getAttribute("data-digest") === message.digest) { return; }
    if (part.hasAttribute("data-guard") && started(part)) {
      var notice = document.getElementById(part.id + "-changed");
      if (notice) { notice.hidden = false; }
      return;
    }
    part.innerHTML = message.html;
    part.setAttribute("data-digest", message.digest);
  }

  var source = new EventSource(main.getAttribute("data-events"));
  source.addEventListener("open", function () { say("live", "on"); });
  source.addEventListener("error", function () { say("reconnecting…", "off"); });
  source.addEventListener("trouble", function (event) { say(event.data, "off"); });
  source.addEventListener("part", function (event) {
    var message;
    try { message = JSON.parse(event.data); } catch (e) { return; }
    if (message && typeof message.part === "string" && typeof message.html === "string") {
      place(message);
      say("live", "on");
    }
  });
  window.addEventListener("pagehide", function () { source.close(); });
}());

// snowfence status page: polls /v1/status every second, draws this
// holder's state, the fleet and the ID decoder. Plain JavaScript, no
// framework; it asks nothing of any origin but its own.
"use strict";

(function () {
  var POLL_MS = 1000;
  var last = null;        // the last /v1/status answer
  var fenceAt = null;     // performance.now() at which the fence is reached
  var startAt = null;     // performance.now() at which a lease not yet started may issue
  var samples = [];       // [now_ms, issued] of recent polls, for the rate
  var layouts = [];

  function $(id) { return document.getElementById(id); }
  function text(id, s) { $(id).textContent = s; }

  function iso(ms) { return new Date(ms).toISOString().replace(".000Z", "Z"); }
  function secs(ms) {
    var s = ms / 1000;
    if (Math.abs(s) >= 120) { return (s / 60).toFixed(1) + " min"; }
    return s.toFixed(1) + " s";
  }
  function regionText(number, name) {
    return name ? name + " (" + number + ")" : String(number);
  }
  function ms(v) { return (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(3)) + " ms"; }
  function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }

  function setState(h) {
    var el = $("state");
    var s, cls;
    if (h.issuing) {
      s = "Issuing"; cls = "ok";
    } else if (h.status === "starting") {
      s = "Not issuing: starting (" + (h.reason || "starting") + ")"; cls = "warn";
    } else if (h.status === "shutting_down") {
      s = "Not issuing: shutting down"; cls = "warn";
    } else {
      s = "Not issuing: " + (h.reason || h.status); cls = "bad";
    }
    if (h.detail) { s += " — " + h.detail; }
    if (h.issuing && h.warnings && h.warnings.length) { s += " (warning: " + h.warnings.join("; ") + ")"; cls = "warn"; }
    el.textContent = s;
    el.className = "state " + cls;
  }

  function drawHolder(st) {
    var h = st.holder;
    setState(h);
    text("machine", h.machine >= 0 ? String(h.machine) : "none held");
    text("region", regionText(h.region, h.region_name));
    text("layout", h.layout || "–");
    text("token", h.token ? String(h.token) : "–");
    // Before its lease starts (a claim's notice window) a holder waits
    // for its first ID, not for the fence: the row counts down to that.
    startAt = null;
    if (h.until_start_ms !== undefined && h.until_start_ms !== null) {
      startAt = performance.now() + h.until_start_ms;
    }
    if (h.until_fence_ms !== undefined && h.until_fence_ms !== null) {
      fenceAt = performance.now() + h.until_fence_ms;
    } else {
      fenceAt = null;
    }
    drawFence();
    if (h.clock) {
      var c = h.clock;
      text("clock", (c.synchronized ? "synchronised" : "NOT synchronised") + ", error " + ms(c.estimated_error_ms) +
        " (max " + ms(c.max_error_ms) + "), offset " + ms(c.offset_ms));
    } else {
      text("clock", "not checked (clock policy off)");
    }
    text("issued", String(h.issued));
    samples.push([st.now_ms, h.issued]);
    while (samples.length > 2 && st.now_ms - samples[0][0] > 5000) { samples.shift(); }
    if (samples.length >= 2) {
      var a = samples[0], b = samples[samples.length - 1];
      var dt = (b[0] - a[0]) / 1000;
      text("rate", dt > 0 && b[1] >= a[1] ? ((b[1] - a[1]) / dt).toFixed(1) : "–");
    }
    text("holdername", h.holder || "–");
    var lease = [];
    if (h.lease_state) { lease.push(h.lease_state); }
    if (h.mark_ms) { lease.push("mark " + iso(h.mark_ms)); }
    if (h.lease_state) {
      lease.push((h.claims || 0) + " claims, " + (h.losses || 0) + " losses, " + (h.renew_failures || 0) + " renewal failures");
    }
    if (h.last_error) { lease.push("last error: " + h.last_error); }
    text("lease", lease.length ? lease.join(" · ") : "no lease keeper");
  }

  // drawFence moves the countdown between polls.
  function drawFence() {
    if (startAt !== null) {
      var wait = startAt - performance.now();
      $("fence").dataset.ms = "";
      text("fence", wait > 0 ? "not started: first ID in " + secs(wait) : "starting");
      return;
    }
    if (fenceAt === null) {
      text("fence", last && last.holder.machine >= 0 ? "no fence" : "–");
      return;
    }
    var left = fenceAt - performance.now();
    $("fence").dataset.ms = String(Math.round(left));
    text("fence", left > 0 ? secs(left) : "reached " + secs(-left) + " ago");
  }

  function cell(tr, s, cls) {
    var td = document.createElement("td");
    td.textContent = s;
    if (cls) { td.className = cls; }
    tr.appendChild(td);
  }

  function drawFleet(st) {
    var f = st.fleet, rows = $("fleet-rows");
    if (!f.available) {
      text("fleet-note", "The fleet is not available here: this server was given no lease store to read.");
      $("fleet-table").hidden = true;
      return;
    }
    $("fleet-table").hidden = false;
    var held = f.records.filter(function (r) { return r.holder; }).length;
    var quiet = f.quiet && f.quiet.count ? f.quiet.count : 0;
    var note = plural(f.records.length + quiet, "number", "numbers") + " on record, " + held + " held";
    if (f.read_ms) { note += ", read " + iso(f.read_ms); }
    if (f.error) { note += ". Reading the store failed: " + f.error; }
    text("fleet-note", note + ".");
    var frag = document.createDocumentFragment();
    f.records.forEach(function (r) {
      var tr = document.createElement("tr");
      tr.dataset.machine = r.machine;
      if (r.quarantined) { tr.className = "quarantined"; }
      else if (r.holder && r.holder === st.holder.holder && r.machine === st.holder.machine) { tr.className = "self"; }
      cell(tr, String(r.machine), "num");
      cell(tr, regionText(r.region, r.region_name));
      cell(tr, r.holder ? r.holder + (tr.className === "self" ? " (this holder)" : "") : "free");
      cell(tr, r.token ? String(r.token) : "–", "num");
      cell(tr, r.mark_ms ? iso(r.mark_ms) : "–");
      cell(tr, r.expires_ms ? (r.expires_ms > st.now_ms ? "in " + secs(r.expires_ms - st.now_ms) : "expired") : "–");
      cell(tr, r.quarantined ? "yes" : "no");
      frag.appendChild(tr);
    });
    if (quiet) {
      // Free numbers that only carry a mark (after raise-marks, every
      // number of its range): one line, not a row each.
      var qt = document.createElement("tr");
      qt.className = "quiet";
      var td = document.createElement("td");
      td.colSpan = 7;
      td.textContent = plural(quiet, "free number", "free numbers") + " with marks up to " + iso(f.quiet.max_mark_ms) +
        " (raised by raise-marks, or released over an hour ago): snowfence leases list --all lists them";
      qt.appendChild(td);
      frag.appendChild(qt);
    }
    rows.replaceChildren(frag);
  }

  function poll() {
    fetch("/v1/status", { cache: "no-store", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.json();
      })
      .then(function (st) {
        last = st;
        layouts = st.layouts || [];
        drawHolder(st);
        drawFleet(st);
        text("updated", "Updated " + iso(st.now_ms) + " (server clock).");
      })
      .catch(function (e) {
        text("updated", "Cannot read the status: " + e.message + ". Retrying.");
      })
      .finally(function () { setTimeout(poll, POLL_MS); });
  }

  // Decoder ---------------------------------------------------------------

  function fieldsOf(l) {
    var fs = [{ key: "sign", name: "sign", bits: 1 }, { key: "time", name: "time", bits: l.time_bits }];
    if (l.region_bits > 0) { fs.push({ key: "region", name: "region", bits: l.region_bits }); }
    if (l.machine_bits > 0) { fs.push({ key: "machine", name: "machine", bits: l.machine_bits }); }
    fs.push({ key: "sequence", name: "sequence", bits: l.sequence_bits });
    return fs;
  }

  function drawBits(d) {
    var l = null;
    layouts.forEach(function (x) { if (x.name === d.layout) { l = x; } });
    if (!l) { throw new Error("the status names no layout " + d.layout); }
    var bin = BigInt(d.id).toString(2).padStart(64, "0");
    var fs = fieldsOf(l), at = 0;
    var bits = document.createDocumentFragment(), list = document.createDocumentFragment();
    fs.forEach(function (f) {
      var part = bin.slice(at, at + f.bits);
      var value = BigInt("0b" + part).toString();
      var note = "";
      if (f.key === "time") { note = l.unit_ms + " ms ticks since " + iso(l.epoch_ms) + ": " + d.created_at; }
      if (f.key === "region") { value = String(d.region_number); note = d.region && d.region !== value ? d.region : ""; }
      if (f.key === "machine") { value = String(d.machine); }
      if (f.key === "sequence") { value = String(d.sequence); }
      for (var i = 0; i < f.bits; i++) {
        var s = document.createElement("span");
        s.textContent = part[i];
        s.className = "f-" + f.key + (i === 0 ? " start" : "");
        s.title = f.name + " bit " + (63 - at - i);
        bits.appendChild(s);
      }
      var li = document.createElement("li");
      li.className = "f-" + f.key;
      li.dataset.field = f.key;
      li.dataset.value = value;
      var n = document.createElement("span");
      n.className = "name";
      n.textContent = f.name + " · " + (f.bits === 1 ? "1 bit, bit " + (63 - at) : f.bits + " bits, " + (63 - at) + "–" + (64 - at - f.bits));
      var v = document.createElement("span");
      v.className = "value";
      v.textContent = value;
      li.appendChild(n);
      li.appendChild(v);
      if (note) {
        var t = document.createElement("span");
        t.className = "note";
        t.textContent = note;
        li.appendChild(t);
      }
      list.appendChild(li);
      at += f.bits;
    });
    $("bits").replaceChildren(bits);
    $("fields").replaceChildren(list);
    var cap = "ID " + d.id + ", layout " + d.layout + ": machine " + d.machine + ", sequence " + d.sequence +
      ", region " + regionText(d.region_number, d.region && d.region !== String(d.region_number) ? d.region : "") + ", created " + d.created_at;
    // Every warning the decoder gave (an ID dated after the server's clock,
    // a region the registry does not know): the ID is still decoded.
    var warnings = (d.warnings || []).map(function (w) { return w.message; });
    if (!warnings.length && d.warning) { warnings = [d.warning]; }
    warnings.forEach(function (m) { cap += ". Warning: " + m; });
    text("bit-caption", cap);
    $("bit-caption").className = warnings.length ? "warn" : "";
    $("bitpicture").hidden = false;
  }

  function decode(ev) {
    ev.preventDefault();
    var id = $("decode-id").value.trim();
    var err = $("decode-error");
    err.hidden = true;
    if (!id) { return; }
    fetch("/v1/status/decode/" + encodeURIComponent(id), { cache: "no-store", headers: { Accept: "application/json" } })
      .then(function (r) {
        return r.json().then(function (body) {
          if (!r.ok) { throw new Error(body.error && body.error.message ? body.error.message : "HTTP " + r.status); }
          return body;
        });
      })
      .then(drawBits)
      .catch(function (e) {
        $("bitpicture").hidden = true;
        err.textContent = "Cannot decode " + id + ": " + e.message;
        err.hidden = false;
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    $("decode-form").addEventListener("submit", decode);
    setInterval(drawFence, 100);
    poll();
  });
})();

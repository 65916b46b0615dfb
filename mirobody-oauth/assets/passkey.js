// Passkeys on mirobody's sign-in and access pages: navigator.credentials with the options the
// server sends, and the answer posted back as JSON. Everything else on these pages works
// without this script; the passkey controls stay hidden where it does not run.
"use strict";
(function () {
  function toBytes(text) {
    var base64 = text.replace(/-/g, "+").replace(/_/g, "/");
    while (base64.length % 4) base64 += "=";
    var raw = atob(base64);
    var bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    return bytes.buffer;
  }

  function toText(buffer) {
    if (!buffer) return null;
    var bytes = new Uint8Array(buffer);
    var raw = "";
    for (var i = 0; i < bytes.length; i++) raw += String.fromCharCode(bytes[i]);
    return btoa(raw).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function post(url, csrf, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body || {}),
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (answer) {
        if (!response.ok) throw new Error(answer.error || "The server refused the passkey (" + response.status + ").");
        return answer;
      });
    });
  }

  function show(box, text) {
    var line = box.querySelector("p.error");
    line.textContent = text;
    line.hidden = !text;
  }

  function failure(error) {
    // The person closed the browser's prompt, or it timed out: nothing went wrong here.
    if (error && error.name === "NotAllowedError") return "The passkey request was cancelled or timed out.";
    return (error && error.message) || "The passkey request failed.";
  }

  function descriptors(list) {
    return (list || []).map(function (c) { return Object.assign({}, c, { id: toBytes(c.id) }); });
  }

  function signIn(box) {
    var button = box.querySelector("button");
    button.addEventListener("click", function () {
      button.disabled = true;
      show(box, "");
      post(box.dataset.begin, box.dataset.csrf)
        .then(function (begun) {
          var options = begun.options.publicKey;
          options.challenge = toBytes(options.challenge);
          options.allowCredentials = descriptors(options.allowCredentials);
          return navigator.credentials.get({ publicKey: options }).then(function (credential) {
            var r = credential.response;
            return post(box.dataset.finish, box.dataset.csrf, {
              ceremony: begun.ceremony,
              next: box.dataset.next,
              credential: {
                id: credential.id,
                rawId: toText(credential.rawId),
                type: credential.type,
                extensions: {},
                response: {
                  authenticatorData: toText(r.authenticatorData),
                  clientDataJSON: toText(r.clientDataJSON),
                  signature: toText(r.signature),
                  userHandle: toText(r.userHandle),
                },
              },
            });
          });
        })
        .then(function (done) { window.location.assign(done.next); })
        .catch(function (error) { show(box, failure(error)); button.disabled = false; });
    });
  }

  function add(form) {
    var button = form.querySelector("button");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      button.disabled = true;
      show(form, "");
      post(form.dataset.begin, form.dataset.csrf)
        .then(function (begun) {
          var options = begun.options.publicKey;
          options.challenge = toBytes(options.challenge);
          options.user.id = toBytes(options.user.id);
          options.excludeCredentials = descriptors(options.excludeCredentials);
          return navigator.credentials.create({ publicKey: options }).then(function (credential) {
            var r = credential.response;
            return post(form.dataset.finish, form.dataset.csrf, {
              ceremony: begun.ceremony,
              name: form.elements.namedItem("name").value,
              credential: {
                id: credential.id,
                rawId: toText(credential.rawId),
                type: credential.type,
                extensions: {},
                response: {
                  attestationObject: toText(r.attestationObject),
                  clientDataJSON: toText(r.clientDataJSON),
                  transports: r.getTransports ? r.getTransports() : undefined,
                },
              },
            });
          });
        })
        .then(function (done) { window.location.assign(done.next); })
        .catch(function (error) { show(form, failure(error)); button.disabled = false; });
    });
  }

  if (!window.PublicKeyCredential || !navigator.credentials) return;
  var box = document.getElementById("passkey-signin");
  if (box) { signIn(box); box.hidden = false; }
  var form = document.getElementById("passkey-add");
  if (form) {
    add(form);
    form.hidden = false;
    var note = document.getElementById("passkey-needs-script");
    if (note) note.hidden = true;
  }
})();

  // The host's postMessage JSON-RPC, shared by every view (inserted where a page says
  // `@view-bridge`): requests with their answers, notifications both ways, the host's own
  // requests (ping, ui/resource-teardown) answered empty.
  let nextId = 1;
  const waiting = new Map();
  const post = (message) => window.parent.postMessage(message, "*");
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = nextId++;
    waiting.set(id, { resolve, reject });
    post({ jsonrpc: "2.0", id, method, params });
  });
  const notify = (method, params) => post({ jsonrpc: "2.0", method, params: params || {} });
  // What the page does with each of the host's notifications, by method.
  const onHost = {};
  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const m = event.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (m.method === undefined && waiting.has(m.id)) {
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      m.error ? w.reject(m.error) : w.resolve(m.result);
    } else if (m.method !== undefined && m.id !== undefined) {
      post({ jsonrpc: "2.0", id: m.id, result: {} });
    } else if (onHost[m.method]) {
      onHost[m.method](m.params || {});
    }
  });
  const initialize = (name) => request("ui/initialize", {
    appInfo: { name, version: "1" }, appCapabilities: {}, protocolVersion: "2026-01-26",
  }).then(() => notify("ui/notifications/initialized"));

// A test host for MCP Apps views, built on the official host SDK: the MCP client is the
// official TypeScript SDK's (in Node), the bridge to the view is @modelcontextprotocol/ext-apps'
// AppBridge (bundled with esbuild into the page), the view runs in a sandboxed iframe in
// headless Chromium under the default view policy (no network). For each tool call given, it
// renders the tool's view with the call's input and result and prints one line of JSON: what a
// person sees (legend, marks with their values), the size the view asked for and the iframe's,
// a screenshot's size, the legend toggled, and every request that left the page.
// A call may carry a `label`, to tell apart several calls of one tool in the output.
// A call with `upload` (a file path) picks that file in the view, which sends it through the
// host's bridge (answered by forwarding the view's tools/call to the server).
// Usage: node views.mjs MCP_URL TOKEN SCREENSHOT_DIR CALLS_JSON
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import esbuild from "esbuild";
import { chromium } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, shots, callsJson] = process.argv.slice(2);
const calls = JSON.parse(callsJson);
const bridge = esbuild.buildSync({
  entryPoints: [new URL("./bridge-entry.js", import.meta.url).pathname],
  bundle: true, format: "iife", platform: "browser", write: false,
}).outputFiles[0].text;

const client = new Client({ name: "mirobody-view-host", version: "1" });
await client.connect(new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
}));
const tools = (await client.listTools()).tools;
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox"] });
const out = [];
try {
  for (const call of calls) {
    const tool = tools.find((t) => t.name === call.name);
    const uri = tool?._meta?.ui?.resourceUri;
    const read = await client.readResource({ uri });
    const view = read.contents[0];
    const result = await client.callTool({ name: call.name, arguments: call.arguments });
    // The host applies the view's declared policy: it declared no domains, so no network.
    const csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'none'";
    const html = view.text.replace("<head>", `<head><meta http-equiv="Content-Security-Policy" content="${csp}">`);

    const page = await browser.newPage({ viewport: { width: 720, height: 900 } });
    const requests = [];
    page.on("request", (r) => { if (!/^(data|about|blob):/.test(r.url())) requests.push(r.url()); });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.setContent(`<!doctype html><body style="margin:0"><div id="host" style="width:640px"></div></body>`);
    await page.addScriptTag({ content: bridge });
    await page.exposeFunction("hostCallTool", (params) => client.callTool(params));
    await page.evaluate(async ({ html, args, result }) => {
      const { AppBridge, PostMessageTransport } = window.McpAppsHost;
      const frame = document.createElement("iframe");
      frame.setAttribute("sandbox", "allow-scripts");
      frame.style.cssText = "width:640px;height:100px;border:0";
      document.getElementById("host").appendChild(frame);
      window.sizes = [];
      const bridge = new AppBridge(null, { name: "test-host", version: "1" }, { serverTools: {} }, {
        hostContext: { theme: "light", displayMode: "inline", containerDimensions: { width: 640, maxHeight: 2000 } },
      });
      bridge.oncalltool = (params) => window.hostCallTool(params);
      bridge.onsizechange = ({ height }) => {
        if (height != null) { frame.style.height = height + "px"; window.sizes.push(height); }
      };
      bridge.oninitialized = () => {
        bridge.sendToolInput({ arguments: args });
        bridge.sendToolResult(result);
      };
      await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
      frame.srcdoc = html;
    }, { html, args: call.arguments, result });

    const frame = page.frames().find((f) => f !== page.mainFrame());
    await frame.waitForSelector(call.upload ? "#file" : "#legend button", { timeout: 10000 });
    await page.waitForFunction(() => window.sizes.length > 0, null, { timeout: 10000 });
    let uploaded = null;
    if (call.upload) {
      // The person picks a file; the view sends it to the server through the host.
      await frame.setInputFiles("#file", call.upload);
      await frame.waitForFunction(() => {
        const s = document.getElementById("status");
        return s.dataset.fileKey || s.className === "error";
      }, null, { timeout: 20000 });
      uploaded = await frame.evaluate(() => {
        const s = document.getElementById("status");
        return { fileKey: s.dataset.fileKey || null, text: s.textContent, error: s.className === "error" };
      });
    }
    const seen = async () => frame.evaluate(() => ({
      legend: [...document.querySelectorAll("#legend button")].map((b) => ({ name: b.dataset.series, on: b.getAttribute("aria-pressed") === "true" })),
      marks: [...document.querySelectorAll("svg [data-series]")].map((m) => ({ series: m.dataset.series, label: m.dataset.label, value: Number(m.dataset.value), kind: m.dataset.kind, tag: m.tagName })),
      lines: document.querySelectorAll("svg polyline").length,
      markYs: [...document.querySelectorAll("svg circle[data-series]")].map((m) => m.cy.baseVal.value),
      bands: [...document.querySelectorAll("svg [data-band]")].map((b) => ({ series: b.dataset.band, low: Number(b.dataset.low), high: Number(b.dataset.high), origin: b.dataset.origin ?? null, y: b.y.baseVal.value, height: b.height.baseVal.value })),
      title: document.getElementById("title")?.textContent ?? "",
    }));
    const before = await seen();
    const requested = await page.evaluate(() => window.sizes[window.sizes.length - 1]);
    const iframeHeight = await page.evaluate(() => document.querySelector("iframe").getBoundingClientRect().height);
    const shot = await page.locator("iframe").screenshot();
    writeFileSync(join(shots, `${call.label ?? call.name}.png`), shot);
    // A blank box of the same size, for comparison: what "nothing drawn" weighs as a PNG.
    await page.evaluate(() => {
      const f = document.querySelector("iframe");
      const box = document.createElement("div");
      box.id = "blank";
      box.style.cssText = `width:${f.clientWidth}px;height:${f.clientHeight}px;background:#fff`;
      document.body.appendChild(box);
    });
    const blank = (await page.locator("#blank").screenshot()).length;
    let toggled = null, widths = null, hover = null;
    if (!call.upload) {
      // The host narrows the view: it redraws to the new width.
      const before = await frame.evaluate(() => document.querySelector("svg").viewBox.baseVal.width);
      await page.evaluate(() => { document.querySelector("iframe").style.width = "420px"; });
      await frame.waitForFunction(() => document.querySelector("svg").viewBox.baseVal.width < 500, null, { timeout: 10000 });
      widths = [before, await frame.evaluate(() => document.querySelector("svg").viewBox.baseVal.width)];
      // Hovering a mark shows its value.
      await frame.locator("svg [data-series]").last().hover();
      hover = await frame.evaluate(() => { const t = document.getElementById("tip"); return t.style.display === "block" ? t.textContent : null; });
      await frame.locator("#legend button").first().click();
      toggled = await seen();
    }
    out.push({
      tool: call.name, label: call.label ?? null, resourceUri: uri, mimeType: view.mimeType, viewMeta: view._meta ?? null,
      result, before, toggled, widths, hover, uploaded, requested, iframeHeight, screenshotBytes: shot.length, blankBytes: blank, requests, errors,
    });
    await page.close();
  }
} finally {
  await browser.close();
  await client.close();
}
console.log(JSON.stringify(out));

// capture.mjs installs each MCP server listed in servers.json from npm (at
// the exact version listed), starts it over stdio with no credentials,
// asks for its tools/list (every page) and writes what it answered to
// testdata/mcp-tools/<slug>.tools.json at the repository's root.
//
// Run by hand, never in CI (it needs the npm registry and starts third-party
// code):   node tools/testdata-refresh/mcp-tools/capture.mjs [slug ...]
//
// Only the members that describe how to call a tool are kept: name, title,
// inputSchema, outputSchema, annotations. Tool descriptions are dropped;
// schemas are kept byte for byte as the server sent them (re-serialized).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..", "..");
const outDir = join(root, "testdata", "mcp-tools");
const servers = JSON.parse(readFileSync(join(here, "servers.json"), "utf8"));
const only = process.argv.slice(2);
const today = new Date().toISOString().slice(0, 10);
const timeoutMs = 120_000;

mkdirSync(outDir, { recursive: true });
let failed = 0;
for (const s of servers) {
  if (only.length && !only.includes(s.slug)) continue;
  try {
    const tools = await capture(s);
    const doc = {
      package: s.package,
      version: s.version,
      args: s.args ?? [],
      captured: today,
      capturedWith: "tools/testdata-refresh/mcp-tools/capture.mjs",
      tools: tools.map(keep),
    };
    writeFileSync(join(outDir, `${s.slug}.tools.json`), JSON.stringify(doc, null, 1) + "\n");
    console.log(`${s.slug}: ${tools.length} tools`);
  } catch (e) {
    failed++;
    console.error(`${s.slug}: ${e.message}`);
  }
}
process.exit(failed ? 1 : 0);

function keep(t) {
  const out = { name: t.name };
  for (const k of ["title", "inputSchema", "outputSchema", "annotations"]) {
    if (t[k] !== undefined) out[k] = t[k];
  }
  return out;
}

// capture installs s.package@s.version in a fresh directory and returns the
// tools its server lists.
async function capture(s) {
  const dir = mkdtempSync(join(tmpdir(), "mcp-capture-"));
  try {
    // installArgs: for a package whose install script downloads a
    // browser or builds native code the server does not need to list tools.
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--no-save", ...(s.installArgs ?? []), "--prefix", dir, `${s.package}@${s.version}`], {
      stdio: ["ignore", "ignore", "inherit"],
      timeout: 600_000,
    });
    const pkgDir = join(dir, "node_modules", ...s.package.split("/"));
    const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
    if (pkg.version !== s.version) throw new Error(`installed ${pkg.version}, want ${s.version}`);
    let bin = pkg.bin;
    if (typeof bin === "object") bin = s.bin ? bin[s.bin] : Object.values(bin)[0];
    if (!bin) throw new Error("the package names no bin");
    const env = { PATH: process.env.PATH, HOME: dir };
    for (const [k, v] of Object.entries(s.env ?? {})) env[k] = v.replaceAll("$DIR", dir);
    return await listTools(join(pkgDir, bin), (s.args ?? []).map((a) => a.replaceAll("$DIR", dir)), env, dir);
  } finally {
    // A server may still be writing to its directory as it is killed.
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
}

// listTools starts the server and speaks newline-delimited JSON-RPC to it:
// initialize, notifications/initialized, then tools/list until no cursor.
function listTools(bin, args, env, cwd) {
  return new Promise((resolvePromise, reject) => {
    // Its own process group, so that what the server starts dies with it.
    const child = spawn(process.execPath, [bin, ...args], { env, cwd, stdio: ["pipe", "pipe", "pipe"], detached: true });
    let stderr = "";
    let buf = "";
    let nextId = 1;
    const pending = new Map();
    const timer = setTimeout(() => finish(new Error(`no tools/list answer in ${timeoutMs / 1000}s; stderr: ${stderr.slice(-500)}`)), timeoutMs);
    function finish(err, value) {
      clearTimeout(timer);
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
      err ? reject(err) : resolvePromise(value);
    }
    child.on("error", (e) => finish(e));
    child.on("exit", (code) => finish(new Error(`server exited (${code}); stderr: ${stderr.slice(-500)}`)));
    child.stderr.on("data", (d) => (stderr += d));
    child.stdout.on("data", (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line.startsWith("{")) continue;
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          continue;
        }
        const p = pending.get(msg.id);
        if (p && (msg.result !== undefined || msg.error !== undefined)) {
          pending.delete(msg.id);
          p(msg);
        }
      }
    });
    const call = (method, params) =>
      new Promise((res) => {
        const id = nextId++;
        pending.set(id, res);
        child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
      });
    (async () => {
      const init = await call("initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "preflight-testdata-capture", version: "1" },
      });
      if (init.error) throw new Error(`initialize: ${JSON.stringify(init.error)}`);
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
      const tools = [];
      let cursor;
      do {
        const r = await call("tools/list", cursor ? { cursor } : {});
        if (r.error) throw new Error(`tools/list: ${JSON.stringify(r.error)}`);
        tools.push(...r.result.tools);
        cursor = r.result.nextCursor;
      } while (cursor);
      finish(null, tools);
    })().catch((e) => finish(e));
  });
}

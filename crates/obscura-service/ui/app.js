// The page of `obscura serve --ui`: lists the service's databases, connects to the one picked
// (downloading its public setup with a progress bar, or revalidating the copy in IndexedDB),
// and fetches what the person asks for privately with the browser client, showing the sizes
// and timings of each step.

import { Database, wasmMemoryBytes } from "./obscura.js";

const $ = (id) => document.getElementById(id);
const form = $("lookup");
const select = $("database");
const target = $("target");
const button = $("fetch");

/** How to ask for each lookup a database serves (whatever its scheme). */
const LOOKUPS = {
  index: { noun: "records", label: "Record index", placeholder: (n) => `0 to ${n - 1}` },
  batch: { noun: "records", label: "Record index", placeholder: (n) => `0 to ${n - 1}` },
  keyword: { noun: "keys", label: "Key", placeholder: () => "a key, e.g. a phone number" },
  "audit-path": { noun: "leaves", label: "Leaf index", placeholder: (n) => `0 to ${n - 1}` },
};

let listing = [];
let connected; // { name, database, setup: { bytes, ms, fromCache } }
let attempt = 0; // the latest connection, so that a slow earlier one does not win

/** `bytes` for people: B, KB, MB, GB. */
function size(bytes) {
  const units = ["B", "KB", "MB", "GB"];
  let unit = 0;
  while (bytes >= 1000 && unit < units.length - 1) {
    bytes /= 1000;
    unit++;
  }
  return `${unit ? bytes.toFixed(bytes < 10 ? 2 : 1) : bytes} ${units[unit]}`;
}

const ms = (value) => `${value < 10 ? value.toFixed(1) : Math.round(value)} ms`;
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** `bytes` as text when they are printable UTF-8, else as hex. */
function shown(bytes) {
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    if (!/[\u0000-\u0008\u000e-\u001f\u007f]/.test(text)) return text;
  } catch {
    // not UTF-8: hex below
  }
  return `${hex(bytes)}  (hex)`;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = !message;
}

function options() {
  const token = $("token").value.trim();
  return token ? { token } : {};
}

/** Lists the databases the token (if any) opens. */
async function list() {
  const reply = await fetch("/v1/databases", { headers: options().token ? { Authorization: `Bearer ${options().token}` } : {} });
  if (!reply.ok) throw new Error(`the database list: ${reply.status} ${(await reply.text()).trim()}`);
  listing = await reply.json();
  const chosen = select.value;
  select.replaceChildren(
    ...listing.map((info) => {
      const asked = LOOKUPS[info.lookup];
      const option = new Option(
        asked ? `${info.name}: ${info.kind}, ${info.records.toLocaleString("en")} ${asked.noun}` : `${info.name}: ${info.kind} (not for the browser client)`,
        info.name,
      );
      option.disabled = !asked;
      return option;
    }),
  );
  if (listing.some((info) => info.name === chosen)) select.value = chosen;
  if (!listing.length) showError("The service has no databases that this page may see (a token may open some).");
  await connect();
}

/** Connects to the database picked: its public setup downloaded and checked, or revalidated. */
async function connect() {
  const info = listing.find((entry) => entry.name === select.value);
  const mine = ++attempt;
  connected = undefined;
  button.disabled = true;
  $("result").hidden = true;
  if (!info || !LOOKUPS[info.lookup]) return;
  const asked = LOOKUPS[info.lookup];
  $("target-label").textContent = asked.label;
  target.placeholder = asked.placeholder(info.records);
  target.inputMode = info.lookup === "keyword" ? "text" : "numeric";
  $("about").textContent = `Public setup ${size(info.hint_bytes)}, query ${size(info.query_bytes)}, answer ${size(info.answer_bytes)}.`;

  const bar = $("setup-progress");
  const status = $("setup-status");
  $("setup").hidden = false;
  bar.removeAttribute("value");
  status.textContent = `Fetching the public setup of ${info.name}…`;
  showError("");
  const started = performance.now();
  try {
    const database = await Database.connect(location.origin, info.name, {
      ...options(),
      sha256: info.setup_sha256,
      onProgress(received, total) {
        if (mine !== attempt) return;
        if (total) {
          bar.max = total;
          bar.value = received;
        }
        status.textContent = `Downloading the public setup: ${size(received)}${total ? ` of ${size(total)}` : ""}`;
      },
    });
    if (mine !== attempt) return;
    const setup = { bytes: database.setupBytes, ms: performance.now() - started, fromCache: database.fromCache };
    connected = { name: info.name, lookup: info.lookup, database, setup };
    bar.max = 1;
    bar.value = 1;
    status.textContent = setup.fromCache
      ? `Public setup (${size(setup.bytes)}) from this browser's cache, revalidated in ${ms(setup.ms)}.`
      : `Public setup downloaded: ${size(setup.bytes)} in ${ms(setup.ms)}, SHA-256 checked.`;
    button.disabled = false;
  } catch (error) {
    if (mine !== attempt) return;
    $("setup").hidden = true;
    showError(`Cannot connect to ${info.name}: ${error.message}`);
  }
}

/** Fetches what the form asks for from the connected database, privately. */
async function fetchValue() {
  const { database, lookup, setup } = connected;
  const text = target.value.trim();
  const started = performance.now();
  let title;
  let value;
  let state = "found";
  if (lookup === "keyword") {
    const found = await database.getKey(text);
    title = found ? `Value under “${text}”` : `No value under “${text}”`;
    value = found ? shown(found) : "absent: the database has no such key";
    state = found ? "found" : "absent";
  } else {
    const index = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(index)) throw new Error("type a whole number from 0");
    if (lookup === "audit-path") {
      const proof = await database.auditPath(index);
      title = `Audit path of leaf ${index}, verified against the root`;
      value = [`leaf hash ${hex(proof.leafHash)}`, ...proof.path.map((h, level) => `level ${level + 1}  ${hex(h)}`), `root      ${hex(proof.root)}`].join("\n");
    } else {
      const record = await database.get(index);
      title = record ? `Record ${index}` : `Record ${index} was deleted`;
      value = record ? shown(record) : "absent: the record was deleted";
      state = record ? "found" : "absent";
    }
  }
  const total = performance.now() - started;
  const cost = database.lastLookup;
  const rows = [
    [setup.fromCache ? "public setup (cached, revalidated)" : "public setup (downloaded once)", size(setup.bytes), ms(setup.ms)],
    [`query${cost.requests > 1 ? ` (${cost.requests} requests)` : ""}: made in the browser`, size(cost.queryBytes), ms(cost.queryMs)],
    ["answer: sent, answered, received", size(cost.answerBytes), ms(cost.roundTripMs)],
    ["decoded in the browser", "", ms(cost.decodeMs)],
  ];
  $("result-title").textContent = title;
  $("value").textContent = value;
  const body = $("steps").tBodies[0];
  body.replaceChildren(...rows.map((cells) => row(cells)));
  const last = row(["click to value", "", ms(total)]);
  last.className = "total";
  last.dataset.ms = total.toFixed(1);
  body.append(last, row(["the client's WebAssembly memory (its peak)", size(wasmMemoryBytes()), ""]));
  $("result").dataset.state = state;
  $("result").hidden = false;
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) tr.insertCell().textContent = cell;
  return tr;
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  if (!connected) return;
  button.disabled = true;
  showError("");
  $("result").hidden = true;
  try {
    await fetchValue();
  } catch (error) {
    showError(error.message);
  } finally {
    button.disabled = false;
  }
});
select.addEventListener("change", connect);
$("token").addEventListener("change", () => list().catch((error) => showError(error.message)));
list().catch((error) => showError(error.message));

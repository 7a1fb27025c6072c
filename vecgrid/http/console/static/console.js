// vecgrid console: a page over vecgrid's REST API (docs/console.md, docs/rest-api.md).
//
// Plain JavaScript, no build step and nothing from another host. It calls the API as a Feathers REST
// client does: GET /svc (find), GET /svc/id (get), POST /svc (create), and custom methods as POST /svc
// with the header X-Service-Method. With auth on, a 401 shows the login form; the token is kept in
// sessionStorage (this tab only) and sent as "Authorization: Bearer <token>".
//
// Everything that comes from the API reaches the page as text nodes or element properties (h() below),
// never as HTML. Every failed call is shown where it happened, with the Feathers error's message.

const TOKEN_KEY = "vecgrid.console.token";
const USER_KEY = "vecgrid.console.user";
const VECTOR_TYPES = new Set(["FloatVector", "BinaryVector", "Float16Vector", "BFloat16Vector", "SparseFloatVector"]);

// --- the API ---------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body, fallback) {
    const message = body && typeof body === "object" && body.message ? body.message : fallback;
    super(message);
    this.status = status;
    this.body = body && typeof body === "object" ? body : null;
    this.name = this.body && this.body.name ? this.body.name : "Error";
  }

  // The message with the per-field or per-row details a Feathers error may carry.
  describe() {
    const lines = [`${this.name} (${this.status}): ${this.message}`];
    const body = this.body || {};
    const details = body.errors !== undefined ? body.errors : body.data;
    if (Array.isArray(details)) {
      for (const d of details.slice(0, 10)) {
        if (d && typeof d === "object") {
          const where = d.instancePath || (d.index !== undefined ? `row ${d.index}` : "");
          lines.push(`  ${where ? where + ": " : ""}${d.message || JSON.stringify(d)}`);
        }
      }
    } else if (details && typeof details === "object" && body.errors !== undefined) {
      for (const [key, why] of Object.entries(details).slice(0, 10)) lines.push(`  ${key}: ${typeof why === "string" ? why : JSON.stringify(why)}`);
    }
    return lines.join("\n");
  }
}

// A Feathers query as the qs module writes it: a[$gt]=1, a[$in][0]=x, $or[0][b]=2.
function encodeQuery(value, prefix, out) {
  if (Array.isArray(value)) {
    value.forEach((item, i) => encodeQuery(item, `${prefix}[${i}]`, out));
  } else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      if (item !== undefined) encodeQuery(item, prefix ? `${prefix}[${key}]` : key, out);
    }
  } else if (prefix) {
    out.push(`${encodeURIComponent(prefix)}=${encodeURIComponent(value === null ? "" : String(value))}`);
  }
  return out;
}

function queryString(query) {
  const parts = encodeQuery(query || {}, "", []);
  return parts.length ? `?${parts.join("&")}` : "";
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

// One call of the API. Answers the decoded JSON (null for 204); throws ApiError on any failure, and
// shows the login form on a 401.
async function api(method, path, { query, body, custom } = {}) {
  const headers = { Accept: "application/json" };
  const auth = token();
  if (auth) headers.Authorization = `Bearer ${auth}`;
  if (custom) {
    headers["X-Service-Method"] = custom;
    method = "POST";
  }
  const init = { method, headers, cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path + queryString(query), init);
  } catch (error) {
    throw new ApiError(0, null, `The REST API did not answer (${error.message})`);
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      throw new ApiError(response.status, null, `Not JSON from ${method} ${path}: ${text.slice(0, 200)}`);
    }
  }
  if (!response.ok) {
    const error = new ApiError(response.status, data, `${response.status} ${response.statusText}`);
    if (response.status === 401 && path !== "/authentication") {
      const had = Boolean(auth);
      forgetLogin();
      showLogin(had ? "Your session ended: log in again." : "");
      error.handled = true;
    }
    throw error;
  }
  return data;
}

const collectionPath = (name) => `/collections/${encodeURIComponent(name)}`;

// --- the DOM ---------------------------------------------------------------------------------------

// An element: properties are set as properties (value, checked, hidden...), "on*" as listeners, the rest
// as attributes; children are nodes or strings (text nodes: nothing is parsed as HTML).
function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (["value", "checked", "hidden", "disabled", "selected", "type", "title", "placeholder", "href",
              "id", "name", "min", "max", "rows", "htmlFor", "required", "autocomplete"].includes(key)) el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  put(el, children);
  return el;
}

function put(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

function replace(el, ...children) {
  el.replaceChildren();
  return put(el, children);
}

function table(columns, rows, { id, empty = "Nothing here." } = {}) {
  // columns: [{title, cell(row) -> node|string, cls?, key?}]
  if (!rows.length) return h("p", { class: "note" }, empty);
  return h("div", { class: "scroll" },
    h("table", { id },
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: c.cls }, c.title)))),
      h("tbody", {}, rows.map((row, i) => h("tr", {}, columns.map((c) =>
        h("td", { class: c.cls, dataset: c.key ? { col: c.key } : undefined }, c.cell(row, i))))))));
}

function showError(el, error) {
  if (error instanceof ApiError && error.handled) return; // a 401: the login form is shown instead
  replace(el, error instanceof ApiError ? error.describe() : String(error && error.message ? error.message : error));
}

function clearError(el) {
  el.replaceChildren();
}

const banner = () => document.getElementById("banner");
const main = () => document.getElementById("main");

// --- formatting ------------------------------------------------------------------------------------

function bytes(n) {
  if (typeof n !== "number" || !Number.isFinite(n)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function loadBadge(state, percent) {
  const name = String(state || "").replace(/^LoadState/, "");
  const label = { Loaded: "Loaded", Loading: "Loading", NotLoad: "Not loaded", NotExist: "Not found" }[name] || name;
  const cls = name === "Loaded" ? "good" : name === "Loading" ? "warn" : "";
  const text = name === "Loading" && typeof percent === "number" ? `${label} ${percent} %` : label;
  return h("span", { class: `badge ${cls}`, dataset: { state: name } }, text);
}

// A value for a table cell: vectors shortened, objects as compact JSON.
function cellValue(value) {
  if (Array.isArray(value) && value.length && value.every((v) => typeof v === "number")) {
    const shown = value.slice(0, 4).map((v) => (Number.isInteger(v) ? String(v) : v.toFixed(4)));
    return h("span", { class: "mono", title: `${value.length} dimensions` },
      `[${shown.join(", ")}${value.length > 4 ? `, … ${value.length} dims` : ""}]`);
  }
  if (value === null || value === undefined) return h("span", { class: "muted" }, "null");
  if (typeof value === "object") {
    const text = JSON.stringify(value);
    return h("span", { class: "mono", title: text.length > 120 ? text.slice(0, 2000) : undefined },
      text.length > 120 ? text.slice(0, 117) + "…" : text);
  }
  return String(value);
}

function fieldParams(field) {
  const params = field.params || {};
  return Object.entries(params).map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : v}`).join(", ");
}

// --- login -----------------------------------------------------------------------------------------

function forgetLogin() {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(USER_KEY);
  showUser();
}

function showUser() {
  const email = sessionStorage.getItem(USER_KEY);
  replace(document.getElementById("user"), email || "");
  document.getElementById("logout").hidden = !token();
}

function showLogin(message) {
  generation++; // stops the refreshes of the view behind it
  const email = h("input", { id: "login-email", type: "email", name: "email", required: true, autocomplete: "username" });
  const password = h("input", { id: "login-password", type: "password", name: "password", required: true,
                                autocomplete: "current-password" });
  const error = h("p", { id: "login-error", class: "error" }, message || "");
  const submit = h("button", { id: "login-submit", type: "submit", class: "primary" }, "Log in");
  const form = h("form", {
    onsubmit: async (event) => {
      event.preventDefault();
      submit.disabled = true;
      clearError(error);
      try {
        const answer = await api("POST", "/authentication",
          { body: { strategy: "local", email: email.value, password: password.value } });
        sessionStorage.setItem(TOKEN_KEY, answer.accessToken);
        sessionStorage.setItem(USER_KEY, (answer.user && answer.user.email) || email.value);
        showUser();
        route();
      } catch (e) {
        showError(error, e);
        submit.disabled = false;
      }
    },
  },
  h("label", {}, "Email", email),
  h("label", {}, "Password", password),
  submit, error);
  replace(main(), h("div", { class: "login panel", id: "login" }, h("h2", {}, "Log in"),
    h("p", { class: "note" }, "This vecgrid requires a login (REST auth is on)."), form));
  email.focus();
}

async function logout() {
  try {
    await api("DELETE", "/authentication");
  } catch (e) {
    showError(banner(), e);
    banner().hidden = false;
  }
  forgetLogin();
  showLogin("Logged out.");
}

// --- routing ---------------------------------------------------------------------------------------

let generation = 0; // bumped by every view change: a refresh of an older view stops
let current = null; // the collection view shown ({name, page, show(tab)}), kept while only its tab changes

// A refresh loop of the view of generation gen: step() does one refresh and answers the delay to the
// next. Running it again (a Refresh button) replaces the pending turn rather than adding a loop.
function poller(gen, step) {
  let timer = null;
  async function run() {
    clearTimeout(timer);
    const delay = await step();
    if (gen !== generation) return;
    clearTimeout(timer);
    timer = setTimeout(() => { if (gen === generation) run(); }, delay);
  }
  return run;
}

function route() {
  const parts = (location.hash || "#/").slice(1).split("/").filter(Boolean).map((p) => decodeURIComponent(p));
  banner().hidden = true;
  clearError(banner());
  for (const id of ["nav-collections", "nav-cluster"]) document.getElementById(id).classList.remove("active");
  if (parts[0] === "collections" && parts[1]) {
    document.getElementById("nav-collections").classList.add("active");
    const tab = ["entities", "search"].includes(parts[2]) ? parts[2] : "overview";
    if (current && current.name === parts[1] && current.page.isConnected) {
      current.show(tab);
      return;
    }
    generation++;
    current = collectionView(parts[1], tab);
  } else if (parts[0] === "cluster") {
    document.getElementById("nav-cluster").classList.add("active");
    generation++;
    current = null;
    clusterView();
  } else {
    document.getElementById("nav-collections").classList.add("active");
    generation++;
    current = null;
    collectionsView();
  }
}

// --- collections -----------------------------------------------------------------------------------

function collectionsView() {
  const gen = generation;
  const body = h("div", { id: "collections" }, h("p", { class: "muted" }, "Loading…"));
  const error = h("p", { class: "error" });
  const refresh = poller(gen, async () => {
    try {
      const list = await api("GET", "/collections");
      if (gen !== generation) return;
      clearError(error);
      list.sort((a, b) => String(a.name).localeCompare(String(b.name)));
      replace(body, table([
        { title: "Name", key: "name", cell: (c) => h("a", { href: `#/collections/${encodeURIComponent(c.name)}`,
                                                             dataset: { collection: c.name } }, c.name) },
        { title: "State", key: "state", cell: (c) => loadBadge(c.loadState, c.loadPercent) },
        { title: "Rows", key: "rows", cls: "num", cell: (c) => put(h("span", {}, String(c.rowCount ?? "–")),
          c.rowCountError ? h("span", { class: "badge bad", title: c.rowCountError }, " count failed") : null) },
        { title: "Id", key: "id", cls: "num mono", cell: (c) => String(c.id) },
      ], list, { id: "collection-list", empty: "No collections yet: create one through the REST API, "
                 + "pymilvus or vecgrid's client." }));
    } catch (e) {
      if (gen === generation) showError(error, e);
    }
    return 5000;
  });
  replace(main(), h("div", { class: "titlebar" }, h("h2", {}, "Collections"), h("span", { class: "spacer" }),
    h("button", { id: "collections-refresh", onclick: refresh }, "Refresh")), error, h("div", { class: "panel" }, body));
  refresh();
}

// --- one collection --------------------------------------------------------------------------------

function collectionView(name, firstTab) {
  const gen = generation;
  const state = { describe: null, knownKeys: new Set() };
  const title = h("div", { class: "titlebar" });
  const error = h("p", { class: "error", id: "collection-error" });
  const tabs = { overview: h("div", { id: "tab-overview" }), entities: h("div", { id: "tab-entities", hidden: true }),
                 search: h("div", { id: "tab-search", hidden: true }) };
  const tabButtons = {};
  for (const [key, label] of [["overview", "Overview"], ["entities", "Entities"], ["search", "Search"]]) {
    tabButtons[key] = h("button", { type: "button", id: `tab-button-${key}`,
      onclick: () => { location.hash = `#/collections/${encodeURIComponent(name)}${key === "overview" ? "" : "/" + key}`; } },
    label);
  }
  const page = h("div", { id: "collection", dataset: { collection: name } },
    title, error, h("div", { class: "tabs" }, Object.values(tabButtons)), Object.values(tabs));
  replace(main(), page);

  let sampled = false;
  let wasLoaded = null;
  const overview = overviewPanel(name, tabs.overview, state, gen, (describe) => {
    renderTitle(describe);
    keysKnown();
    entities.refreshIfShown();
    const loaded = /Loaded$/.test(describe.loadState);
    if (wasLoaded === false && loaded) entities.reload(); // its last page was a 409 "not loaded"
    wasLoaded = loaded;
    if (!sampled && /Loaded$/.test(describe.loadState) && describe.schema && describe.schema.enableDynamicField) {
      sampled = true;
      sampleKeys();
    }
  });
  // The dynamic field's keys are in no schema: a few rows name them (for the sort and output field lists).
  async function sampleKeys() {
    try {
      const answer = await api("GET", `${collectionPath(name)}/entities`, { query: { $limit: 20 } });
      for (const row of answer.data || []) for (const key of Object.keys(row)) state.knownKeys.add(key);
      keysKnown();
    } catch (e) {
      showError(error, e);
    }
  }
  function keysKnown() {
    entities.schemaKnown();
    search.schemaKnown();
  }
  const entities = entitiesPanel(name, tabs.entities, state, keysKnown, (id) => {
    location.hash = `#/collections/${encodeURIComponent(name)}/search`;
    search.byId(id);
  });
  const search = searchPanel(name, tabs.search, state);

  const loadButton = h("button", { id: "load", onclick: () => loadOrRelease("load") }, "Load");
  const releaseButton = h("button", { id: "release", onclick: () => loadOrRelease("release") }, "Release");
  const refreshButton = h("button", { id: "collection-refresh", onclick: () => overview.refresh() }, "Refresh");

  function renderTitle(d) {
    const loaded = /Loaded$/.test(d.loadState);
    const loading = /Loading$/.test(d.loadState);
    loadButton.disabled = loaded || loading;
    releaseButton.disabled = !(loaded || loading);
    replace(title, h("h2", {}, d.name), loadBadge(d.loadState, d.loadPercent),
      h("span", { class: "muted", id: "collection-rows" }, `${d.rowCount ?? "–"} rows`),
      h("span", { class: "spacer" }), loadButton, releaseButton, refreshButton);
  }

  async function loadOrRelease(which) {
    loadButton.disabled = releaseButton.disabled = true;
    try {
      await api("POST", "/collections", { custom: which, body: { name } });
      clearError(error);
    } catch (e) {
      showError(error, e);
    }
    overview.refresh();
  }

  replace(title, h("h2", {}, name));
  const view = {
    name, page,
    show(tab) {
      for (const [key, panel] of Object.entries(tabs)) {
        panel.hidden = key !== tab;
        tabButtons[key].classList.toggle("active", key === tab);
      }
      if (tab === "entities") entities.firstShow();
    },
  };
  view.show(firstTab);
  overview.refresh();
  return view;
}

function overviewPanel(name, el, state, gen, onDescribe) {
  const error = h("p", { class: "error" });
  const content = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  put(el, error, content);

  const refresh = poller(gen, async () => {
    let busy = false;
    try {
      const [d, partitions] = await Promise.all([
        api("GET", collectionPath(name)),
        api("GET", `${collectionPath(name)}/partitions`),
      ]);
      if (gen !== generation) return 0;
      clearError(error);
      state.describe = d;
      onDescribe(d);
      render(d, partitions);
      busy = /Loading$/.test(d.loadState) || (d.indexes || []).some((i) => i.state !== "Finished" && i.state !== "Failed");
    } catch (e) {
      if (gen === generation) showError(error, e);
    }
    return busy ? 2000 : 10000;
  });

  function render(d, partitions) {
    const fields = (d.schema && d.schema.fields) || [];
    replace(content,
      h("div", { class: "panel" }, h("dl", { class: "kv" },
        h("dt", {}, "Description"), h("dd", {}, d.description || "–"),
        h("dt", {}, "Id"), h("dd", { class: "mono" }, String(d.id)),
        h("dt", {}, "Shards"), h("dd", {}, String(d.shards), " ", h("span", { class: "muted mono" }, (d.channels || []).join(", "))),
        h("dt", {}, "Consistency"), h("dd", {}, d.consistencyLevel || "–"),
        h("dt", {}, "Dynamic field"), h("dd", {}, d.schema && d.schema.enableDynamicField ? "on" : "off"),
        h("dt", {}, "Replicas"), h("dd", {}, String(d.replicas ?? "–"), " in ", (d.resourceGroups || []).join(", ") || "–"),
        h("dt", {}, "Properties"), h("dd", {}, cellValue(d.properties || {})))),
      h("h3", {}, "Schema"),
      table([
        { title: "Field", key: "field", cell: (f) => f.name },
        { title: "Type", key: "type", cell: (f) => f.type + (f.elementType ? `<${f.elementType}>` : "") },
        { title: "Primary key", cell: (f) => (f.isPrimary ? (f.autoId ? "yes (auto id)" : "yes") : "") },
        { title: "Params", cell: (f) => h("span", { class: "mono" }, fieldParams(f)) },
        { title: "Description", cell: (f) => f.description || "" },
      ], fields, { id: "schema" }),
      h("h3", {}, "Partitions"),
      table([
        { title: "Name", key: "name", cell: (p) => p.name },
        { title: "Rows", cls: "num", cell: (p) => String(p.rowCount ?? "–") },
        { title: "State", cell: (p) => loadBadge(p.loadState, p.loadPercent) },
        { title: "Placement", cell: (p) => p.placement || "–" },
        { title: "Id", cls: "num mono", cell: (p) => String(p.id) },
      ], partitions, { id: "partitions" }),
      h("h3", {}, "Indexes"),
      table([
        { title: "Name", key: "name", cell: (i) => i.name },
        { title: "Field", cell: (i) => i.field },
        { title: "Type", cell: (i) => `${i.type}${i.autoIndex ? " (auto)" : ""}` },
        { title: "Metric", cell: (i) => i.metric || "" },
        { title: "Params", cell: (i) => cellValue(i.params || {}) },
        { title: "State", cell: (i) => h("span", { class: `badge ${i.state === "Finished" ? "good" : i.state === "Failed" ? "bad" : "warn"}` }, i.state) },
        { title: "Progress", cell: (i) => h("span", {}, h("progress", { max: 100, value: i.progress ?? 0 }),
          `${i.progress ?? 0} % (${i.indexedRows ?? 0} of ${i.totalRows ?? 0} rows, ${i.pendingRows ?? 0} pending)`) },
        { title: "Placement", cell: (i) => Object.entries(i.placement || {}).map(([k, v]) => `${k} ${v}`).join(", ") || "–" },
        { title: "Failure", cell: (i) => i.failReason || "" },
      ], d.indexes || [], { id: "indexes", empty: "No index." }));
  }

  return { refresh };
}

function scalarFieldNames(describe) {
  return ((describe && describe.schema && describe.schema.fields) || [])
    .filter((f) => !VECTOR_TYPES.has(f.type) && !f.isDynamic && f.name !== "$meta").map((f) => f.name);
}

function vectorFields(describe) {
  return ((describe && describe.schema && describe.schema.fields) || []).filter((f) => VECTOR_TYPES.has(f.type));
}

function primaryField(describe) {
  return ((describe && describe.schema && describe.schema.fields) || []).find((f) => f.isPrimary) || { name: "id", type: "Int64" };
}

// A key typed by the user, as the API takes it: Int64 keys as numbers while they are exact in JavaScript.
function keyValue(describe, text) {
  const pk = primaryField(describe);
  const trimmed = String(text).trim();
  if (pk.type === "Int64" && /^-?\d+$/.test(trimmed)) {
    const n = Number(trimmed);
    return Number.isSafeInteger(n) ? n : trimmed;
  }
  return trimmed;
}

// Rows' columns: the key first, then every other name in the order met.
function columnsOf(rows, pk) {
  const names = [pk];
  for (const row of rows) for (const key of Object.keys(row)) if (!names.includes(key)) names.push(key);
  return names;
}

// --- entities --------------------------------------------------------------------------------------

function entitiesPanel(name, el, state, onKeys, onSearchSimilar) {
  const filter = h("input", { id: "entities-filter", class: "mono wide", placeholder: '{"year": {"$gte": 2018}}' });
  const sortField = h("input", { id: "entities-sort", list: "entities-fields", placeholder: "field" });
  const fieldList = h("datalist", { id: "entities-fields" });
  const order = h("select", { id: "entities-order" }, h("option", { value: "1" }, "ascending"), h("option", { value: "-1" }, "descending"));
  const limit = h("select", { id: "entities-limit" }, [10, 25, 50, 100].map((n) => h("option", { value: String(n), selected: n === 25 }, String(n))));
  const withVectors = h("input", { id: "entities-vectors", type: "checkbox", checked: true });
  const error = h("p", { class: "error", id: "entities-error" });
  const results = h("div", { id: "entities" });
  const status = h("span", { class: "muted", id: "entities-status" });
  const prev = h("button", { id: "entities-prev", disabled: true, onclick: () => page(Math.max(0, skip - Number(limit.value))) }, "‹ Previous");
  const next = h("button", { id: "entities-next", disabled: true, onclick: () => page(skip + Number(limit.value)) }, "Next ›");
  let skip = 0;
  let shown = false;
  let requested = 0;

  put(el, h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); page(0); } },
    h("label", {}, "Filter (a Feathers query as JSON)", filter),
    h("label", {}, "Sort by", sortField, fieldList),
    h("label", {}, "Order", order),
    h("label", {}, "Page size", limit),
    h("label", { class: "inline" }, withVectors, "vectors"),
    h("button", { type: "submit", class: "primary", id: "entities-apply" }, "Apply")),
  error, h("div", { class: "pager" }, prev, status, next), results);

  function query() {
    const q = { $limit: Number(limit.value), $skip: skip };
    const text = filter.value.trim();
    if (text) {
      let parsed;
      try {
        parsed = JSON.parse(text);
      } catch (e) {
        throw new Error(`The filter is not JSON: ${e.message}`);
      }
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
        throw new Error('The filter must be a JSON object, e.g. {"year": {"$gte": 2018}, "color": "red"}');
      }
      Object.assign(q, parsed);
    }
    if (sortField.value.trim()) q.$sort = { [sortField.value.trim()]: Number(order.value) };
    return q;
  }

  async function page(newSkip) {
    skip = newSkip;
    const ticket = ++requested;
    prev.disabled = next.disabled = true;
    try {
      const q = query();
      const path = `${collectionPath(name)}/entities`;
      const answer = await api("GET", path, { query: q });
      let rows = answer.data || [];
      const pk = primaryField(state.describe).name;
      const vectors = vectorFields(state.describe);
      if (withVectors.checked && vectors.length && rows.length) {
        // Vectors are left out unless named; naming them leaves out the dynamic keys: a second read by key.
        const more = await api("GET", path, { query: { [pk]: { $in: rows.map((r) => r[pk]) }, $limit: rows.length,
                                                         $select: [pk, ...vectors.map((f) => f.name)] } });
        const byKey = new Map((more.data || []).map((r) => [String(r[pk]), r]));
        rows = rows.map((r) => ({ ...r, ...(byKey.get(String(r[pk])) || {}) }));
      }
      if (ticket !== requested) return;
      clearError(error);
      for (const row of rows) for (const key of Object.keys(row)) state.knownKeys.add(key);
      onKeys();
      const total = answer.total ?? rows.length;
      replace(status, rows.length ? `rows ${skip + 1}–${skip + rows.length} of ${total}` : `no rows (of ${total})`);
      prev.disabled = skip === 0;
      next.disabled = skip + rows.length >= total;
      replace(results, table([
        ...columnsOf(rows, pk).map((c) => ({ title: c, key: c, cls: c === pk ? "mono" : undefined, cell: (r) => cellValue(r[c]) })),
        { title: "", cell: (r) => h("button", { class: "small", type: "button", dataset: { searchId: String(r[pk]) },
                                                  onclick: () => onSearchSimilar(String(r[pk])) }, "Search similar") },
      ], rows, { id: "entities-table", empty: "No entity matches." }));
    } catch (e) {
      if (ticket !== requested) return;
      showError(error, e);
      prev.disabled = skip === 0;
    }
  }

  function schemaKnown() {
    const names = new Set([...scalarFieldNames(state.describe), ...state.knownKeys]);
    for (const f of vectorFields(state.describe)) names.delete(f.name);
    replace(fieldList, [...names].sort().map((n) => h("option", { value: n })));
  }

  return {
    schemaKnown,
    firstShow() {
      if (!shown && state.describe) { shown = true; page(0); }
    },
    // called once the description is known, when the tab was opened first
    refreshIfShown() { if (!shown && !el.hidden && state.describe) { shown = true; page(0); } },
    reload() { if (shown) page(skip); },
  };
}

// --- search ----------------------------------------------------------------------------------------

function searchPanel(name, el, state) {
  const byId = h("input", { type: "radio", name: "search-mode", id: "search-mode-id", value: "id", checked: true });
  const byVector = h("input", { type: "radio", name: "search-mode", id: "search-mode-vector", value: "vector" });
  const idInput = h("input", { id: "search-id", class: "mono", placeholder: "a stored entity's primary key" });
  const vectorInput = h("textarea", { id: "search-vector", rows: 3, placeholder: "[0.12, 0.5, ...]" });
  const field = h("select", { id: "search-field" });
  const limit = h("input", { id: "search-limit", type: "number", min: 1, max: 16384, value: "10" });
  const filter = h("input", { id: "search-filter", class: "mono wide", placeholder: 'year > 2000 and color == "red"  or  {"year": {"$gt": 2000}}' });
  const fields = h("input", { id: "search-fields", class: "mono wide", placeholder: "output fields, comma-separated" });
  const run = h("button", { id: "search-run", type: "submit", class: "primary" }, "Search");
  const error = h("p", { class: "error", id: "search-error" });
  const status = h("p", { class: "muted", id: "search-status" });
  const results = h("div", { id: "search-results" });
  const idRow = h("div", { class: "row" }, h("label", {}, "Primary key", idInput));
  const vectorRow = h("div", { class: "row", hidden: true }, h("label", { class: "grow" }, "Query vector (a JSON array)", vectorInput));
  let fieldsTouched = false;
  let requested = 0;

  const switchMode = () => {
    idRow.hidden = !byId.checked;
    vectorRow.hidden = byId.checked;
  };
  byId.addEventListener("change", switchMode);
  byVector.addEventListener("change", switchMode);
  fields.addEventListener("input", () => { fieldsTouched = true; });

  put(el, h("form", { class: "panel", onsubmit: (e) => { e.preventDefault(); runSearch(); } },
    h("div", { class: "row" },
      h("label", { class: "inline" }, byId, "by a stored entity's id"),
      h("label", { class: "inline" }, byVector, "by a vector")),
    idRow, vectorRow,
    h("div", { class: "row" },
      h("label", {}, "Vector field", field),
      h("label", {}, "Top k", limit),
      h("label", {}, "Filter (Milvus expression or JSON query)", filter),
      h("label", {}, "Output fields", fields),
      run)),
  error, status, results);

  function schemaKnown() {
    const vectors = vectorFields(state.describe);
    const chosen = field.value;
    replace(field, vectors.map((f) => h("option", { value: f.name, selected: f.name === chosen },
      `${f.name} (${f.type}${f.params && f.params.dim ? `, dim ${f.params.dim}` : ""})`)));
    if (!fieldsTouched) {
      const pk = primaryField(state.describe).name;
      const names = new Set([...scalarFieldNames(state.describe), ...state.knownKeys]);
      names.delete(pk);
      for (const f of vectors) names.delete(f.name);
      fields.value = [...names].join(", ");
    }
  }

  function body() {
    const b = { limit: Number(limit.value) };
    if (!Number.isInteger(b.limit) || b.limit < 1) throw new Error("Top k must be a positive integer");
    if (byId.checked) {
      if (!idInput.value.trim()) throw new Error("Give the primary key of a stored entity");
      b.ids = [keyValue(state.describe, idInput.value)];
    } else {
      let vector;
      try {
        vector = JSON.parse(vectorInput.value);
      } catch (e) {
        throw new Error(`The vector is not JSON: ${e.message}`);
      }
      if (!Array.isArray(vector) || !vector.length || !vector.every((v) => typeof v === "number")) {
        throw new Error("The vector must be a JSON array of numbers");
      }
      const chosen = vectorFields(state.describe).find((f) => f.name === field.value);
      const dim = chosen && chosen.params && Number(chosen.params.dim);
      if (dim && vector.length !== dim) throw new Error(`The vector has ${vector.length} values; ${chosen.name} has ${dim} dimensions`);
      b.vector = vector;
    }
    if (field.value) b.field = field.value;
    const text = filter.value.trim();
    if (text) {
      if (text.startsWith("{")) {
        try {
          b.filter = JSON.parse(text);
        } catch (e) {
          throw new Error(`The filter starts with "{" but is not JSON: ${e.message}`);
        }
      } else {
        b.filter = text;
      }
    }
    const select = fields.value.split(",").map((s) => s.trim()).filter(Boolean);
    if (select.length) b.select = select;
    return b;
  }

  async function runSearch() {
    const ticket = ++requested;
    run.disabled = true;
    try {
      const request = body();
      const started = performance.now();
      const answer = await api("POST", `${collectionPath(name)}/entities`, { custom: "search", body: request });
      if (ticket !== requested) return;
      clearError(error);
      const hits = (answer && answer[0]) || [];
      const ms = Math.round(performance.now() - started);
      replace(status, `${hits.length} hit${hits.length === 1 ? "" : "s"} in ${ms} ms`);
      const names = columnsOf(hits, "id").filter((n) => n !== "id" && n !== "distance");
      replace(results, table([
        { title: "#", cls: "num rank", cell: (hit, i) => String(i + 1) },
        { title: "id", key: "id", cls: "mono", cell: (hit) => h("a", { href: "#", onclick: (e) => { e.preventDefault(); searchById(String(hit.id)); } }, String(hit.id)) },
        { title: "distance", key: "distance", cls: "num mono", cell: (hit) => (typeof hit.distance === "number" ? hit.distance.toPrecision(6) : String(hit.distance)) },
        ...names.map((n) => ({ title: n, key: n, cell: (hit) => cellValue(hit[n]) })),
      ], hits, { id: "hits", empty: "No hits." }));
    } catch (e) {
      if (ticket !== requested) return;
      replace(status);
      replace(results);
      showError(error, e);
    } finally {
      if (ticket === requested) run.disabled = false;
    }
  }

  function searchById(id) {
    byId.checked = true;
    switchMode();
    idInput.value = id;
    runSearch();
  }

  return { schemaKnown, byId: searchById };
}

// --- the cluster -----------------------------------------------------------------------------------

function clusterView() {
  const gen = generation;
  const sections = {};
  const order = [["nodes", "Query nodes"], ["replicas", "Replicas"], ["channels", "Channels"], ["segments", "Segments"]];
  for (const [key, label] of order) {
    sections[key] = { error: h("p", { class: "error" }), body: h("div", { id: `cluster-${key}` }, h("p", { class: "muted" }, "Loading…")), label };
  }
  const refreshButton = h("button", { id: "cluster-refresh", onclick: () => refresh() }, "Refresh");
  let refresh = null;
  replace(main(), h("div", { class: "titlebar" }, h("h2", {}, "Cluster"), h("span", { class: "spacer" }), refreshButton),
    order.map(([key]) => [h("h3", {}, sections[key].label), sections[key].error, h("div", { class: "panel" }, sections[key].body)]));

  const nodeName = new Map();
  const nodeLabel = (id) => (nodeName.has(id) ? `${id} (${nodeName.get(id)})` : String(id));
  const SHOWN_SEGMENTS = 500;

  const renderers = {
    nodes: (nodes) => {
      for (const n of nodes) nodeName.set(n.id, n.address);
      return table([
        { title: "Node", key: "node", cls: "mono", cell: (n) => String(n.id) },
        { title: "Name", cell: (n) => n.name || "" },
        { title: "Address", key: "address", cls: "mono", cell: (n) => n.address },
        { title: "State", cell: (n) => h("span", { class: `badge ${n.state === "normal" ? "good" : "warn"}` }, n.state) },
        { title: "Device", cell: (n) => n.device },
        { title: "Resource group", cell: (n) => n.resourceGroup },
        { title: "Segments", cls: "num", cell: (n) => String(n.segmentCount) },
        { title: "Channels", cls: "num", cell: (n) => String(n.channelCount) },
        { title: "Memory", cell: (n) => `${bytes(n.memoryUsedBytes)} of ${bytes(n.memoryCapacityBytes)}` },
        { title: "GPU memory", cell: (n) => (n.gpuMemoryCapacityBytes ? `${bytes(n.gpuMemoryUsedBytes)} of ${bytes(n.gpuMemoryCapacityBytes)}` : "–") },
        { title: "Metrics", cell: (n) => (n.metricsError ? h("span", { class: "badge bad", title: n.metricsError }, "unreachable") : "ok") },
      ], nodes, { id: "nodes", empty: "No query node." });
    },
    replicas: (replicas) => table([
      { title: "Replica", cls: "mono", cell: (r) => String(r.id) },
      { title: "Collection", cell: (r) => h("a", { href: `#/collections/${encodeURIComponent(r.collection)}` }, r.collection) },
      { title: "Resource group", cell: (r) => r.resourceGroup },
      { title: "Nodes", cell: (r) => (r.nodes || []).map(nodeLabel).join(", ") },
      { title: "Shards (channel: leader; nodes)", cell: (r) => h("div", {}, (r.shards || []).map((s) =>
        h("div", { class: "mono" }, `${s.channel}: ${nodeLabel(s.leader)}; ${(s.nodes || []).join(", ")}`))) },
    ], replicas, { id: "replicas", empty: "No replica: no collection is loaded." }),
    channels: (channels) => table([
      { title: "Channel", cls: "mono", cell: (c) => c.name },
      { title: "Collection", cell: (c) => c.collection },
      { title: "Leaders", cell: (c) => (c.leaders || []).map((l) => nodeLabel(l.node)).join(", ") || "–" },
    ], channels, { id: "channels", empty: "No channel is served." }),
    segments: (segments) => h("div", {},
      segments.length > SHOWN_SEGMENTS ? h("p", { class: "note" }, `${segments.length} segments; the first ${SHOWN_SEGMENTS} shown.`) : null,
      table([
        { title: "Segment", key: "segment", cls: "mono", cell: (s) => String(s.id) },
        { title: "Collection", cell: (s) => s.collection },
        { title: "Partition", cell: (s) => s.partition ?? String(s.partitionId) },
        { title: "Channel", cls: "mono", cell: (s) => s.channel },
        { title: "Rows", cls: "num", cell: (s) => String(s.numRows) },
        { title: "Level", cell: (s) => s.level },
        { title: "State", cell: (s) => s.segmentState },
        { title: "Held by (node: placement)", key: "placement", cell: (s) => ((s.placements && s.placements.length)
          ? s.placements.map((p) => `${nodeLabel(p.node)}: ${p.state}`).join(", ") : (s.nodes || []).map(nodeLabel).join(", ")) },
        { title: "Replicas", cls: "mono", cell: (s) => (s.replicas || []).join(", ") },
      ], segments.slice(0, SHOWN_SEGMENTS), { id: "segments", empty: "No sealed segment is served (growing rows live on the channel leaders)." })),
  };

  refresh = poller(gen, async () => {
    const answers = await Promise.allSettled(order.map(([key]) => api("GET", `/${key}`)));
    if (gen !== generation) return 0;
    order.forEach(([key], i) => {
      const { status, value, reason } = answers[i];
      if (status === "fulfilled") {
        clearError(sections[key].error);
        replace(sections[key].body, renderers[key](value || []));
      } else {
        showError(sections[key].error, reason);
      }
    });
    return 10000;
  });
  refresh();
}

// --- start -----------------------------------------------------------------------------------------

document.getElementById("logout").addEventListener("click", logout);
window.addEventListener("hashchange", route);
showUser();
route();

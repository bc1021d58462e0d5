'use strict';
// The live GPU map: GET api/map (the same node states the scheduler extender decides on) drawn
// per node and offered resource as slots, filled by the pods that hold them. Nothing is decided
// here; free is what the map says is allocatable minus what it says is used.

const REFRESH_MS = 5000;

let latest = null;     // the last api/map answer
let refreshTimer = 0;
let loading = false;

// ---------------------------------------------------------------- filters, kept in the address

function readFilters() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { tenant: params.get('tenant') || '', pool: params.get('pool') || '' };
}

function keepFilters() {
  const params = new URLSearchParams();
  if ($('#tenant-filter').value) params.set('tenant', $('#tenant-filter').value);
  if ($('#pool-filter').value) params.set('pool', $('#pool-filter').value);
  history.replaceState(null, '', params.toString() ? `#${params}` : location.pathname);
}

// Refills a filter's options from the map, keeping the choice (also one the map no longer has,
// so a filter from a link survives a tenant that has no pods at the moment).
function fillFilter(select, values, allText, wanted) {
  const choices = [...new Set([...values, ...(wanted ? [wanted] : [])])];
  select.replaceChildren(el('option', { value: '' }, allText),
    ...choices.map((v) => el('option', { value: v }, v)));
  select.value = wanted;
}

// ---------------------------------------------------------------- drawing

function tenantColours(tenants) {
  return new Map(tenants.map((t, i) => [t, `tenant-${i % 10}`]));
}

function holdsTenant(node, tenant) {
  return node.resources.some((r) => r.holders.some((h) => h.tenant === tenant)) ||
    node.draDevices.some((d) => d.tenant === tenant ||
      (d.shares || []).some((s) => s.tenant === tenant));
}

function resourceTitle(r) {
  if (r.kind === 'mig') return `MIG ${r.profile}`;
  if (r.kind === 'shared') return 'shared replicas';
  return 'whole GPUs';
}

function colourOf(tenant, colours) { return colours.get(tenant) || 'tenant-9'; }

function known(value) { return value !== null && value !== undefined; }

// "MIG-9c070001…", "GPU-5a1f0020…::2", "MIG-GPU-5a1f0010…/9/0": a device ID short enough
// for a slot, keeping its kind, the UUID's first group and what follows it (replica, instance).
function shortId(id) {
  const m = /^((?:MIG-)?(?:GPU-)?[0-9a-f]{8})(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}(.*)$/i.exec(id);
  return m ? `${m[1]}…${m[2]}` : id;
}

function deviceTitle(d) {
  return d.gpu && d.gpu !== d.id ? `${d.id} on ${d.gpu}` : d.id;
}

// `devices`: the IDs the node agent reported for the slot (one per slot; the last slot of a
// holder takes any the count does not cover).
function holderSlot(holder, colours, tenantFilter, devices = []) {
  const classes = ['slot', colourOf(holder.tenant, colours)];
  if (holder.assumed) classes.push('assumed');
  // Fair sharing: among its tenant's pods beyond its guarantee, so another tenant may reclaim it.
  if (holder.borrowed) classes.push('borrowed');
  if (tenantFilter && holder.tenant !== tenantFilter) classes.push('dimmed');
  const pod = `${holder.namespace}/${holder.pod}`;
  const gpu = known(holder.gpuIndex) ? `, GPU ${holder.gpuIndex}` : '';
  const binding = (holder.assumed ? ' (being bound)' : '') +
    (holder.borrowed ? ' (borrowed: reclaimable)' : '');
  const ids = devices.map((d) => `\n${deviceTitle(d)}`).join('');
  return el('div', { class: classes.join(' '), 'data-tenant': holder.tenant, 'data-pod': pod,
    'data-borrowed': holder.borrowed ? 'true' : 'false',
    title: `${holder.tenant}: ${pod}${gpu}${binding}${ids}` },
  el('strong', {}, holder.tenant), el('br'), holder.pod,
  holder.borrowed ? [el('br'), el('em', { class: 'borrowed-mark' }, 'borrowed')] : [],
  devices.flatMap((d) => [el('br'), el('code', { class: 'device-id', 'data-device-id': d.id,
    title: deviceTitle(d) }, shortId(d.id))]));
}

function freeSlot() {
  return el('div', { class: 'slot free-slot', 'data-free': 'true' }, 'free');
}

// Shared replicas whose GPU is known are drawn per GPU (a node's replicas split evenly over
// its GPUs); anything else is one row of slots.
function drawSlots(r, node, colours, tenantFilter) {
  const slots = el('div', { class: 'slots' });
  const perGpu = r.kind === 'shared' && node.gpus > 1 && r.allocatable % node.gpus === 0 ?
    r.allocatable / node.gpus : 0;
  const filled = [];  // one per slot: the holder and the devices drawn in it
  for (const h of r.holders) {
    const devices = h.devices || [];
    for (let i = 0; i < h.count; i++) {
      filled.push({ h, devices: i === h.count - 1 ? devices.slice(i) : devices.slice(i, i + 1) });
    }
  }
  const slot = (f) => holderSlot(f.h, colours, tenantFilter, f.devices);
  if (!perGpu) {
    slots.append(...filled.map(slot));
    for (let i = filled.length; i < r.allocatable; i++) slots.append(freeSlot());
    return slots;
  }
  const groups = Array.from({ length: node.gpus }, () => []);
  const unplaced = [];
  for (const f of filled) {
    const g = groups[f.h.gpuIndex];
    if (g && g.length < perGpu) g.push(f); else unplaced.push(f);
  }
  for (const f of unplaced) {
    const g = groups.find((group) => group.length < perGpu);
    if (g) g.push(f);
  }
  groups.forEach((held, index) => {
    const group = el('div', { class: 'per-gpu', 'data-gpu': index },
      el('span', { class: 'gpu-name' }, `GPU ${index}`),
      held.map(slot));
    for (let i = held.length; i < perGpu; i++) group.append(freeSlot());
    slots.append(group);
  });
  return slots;
}

function slotName(r) {
  if (r.kind === 'mig') return r.profile;
  return r.kind === 'gpu' ? 'whole GPU' : 'shared replica';
}

function drawResource(r, node, colours, tenantFilter) {
  return el('div', { class: 'resource', 'data-resource': r.name },
    el('div', { class: 'label' },
      el('span', {}, el('strong', {}, resourceTitle(r)), ` ${r.name}`),
      el('span', { class: 'free' }, `${r.used} of ${r.allocatable} used`)),
    drawSlots(r, node, colours, tenantFilter));
}

function drawNode(node, colours, tenantFilter) {
  const badges = [];
  if (node.migState) {
    const state = `MIG reconfiguring (${node.migState})`;
    badges.push(el('span', { class: 'badge reconfiguring' }, state));
  }
  if (node.cordoned) badges.push(el('span', { class: 'badge cordoned' }, 'cordoned'));
  const gpus = known(node.gpus) ? `${node.gpus} GPU${node.gpus === 1 ? '' : 's'}` : null;
  const facts = [node.pool && `pool ${node.pool}`, node.mode, node.model || node.product, gpus];
  const free = node.resources.filter((r) => r.allocatable > r.used)
    .map((r) => `${r.allocatable - r.used} x ${slotName(r)}`);
  return el('article', { class: `node${node.migState ? ' unsettled' : ''}`,
    'data-node': node.name, 'data-pool': node.pool, 'aria-label': `node ${node.name}` },
  el('header', {}, el('h3', {}, node.name), badges,
    el('span', { class: 'facts' }, facts.filter(Boolean).join(' · '))),
  node.resources.map((r) => drawResource(r, node, colours, tenantFilter)),
  node.draDevices.length ? drawDevices(node.draDevices, colours) : null,
  (node.physicalGpus || []).length ? drawPhysicalGpus(node.physicalGpus, colours) : null,
  el('p', { class: 'node-free' }, `Free: ${free.length ? free.join(', ') : 'nothing'}`));
}

// The physical GPUs the node agent's reports name, with the tenants on each: where two tenants
// share one, they share its fault domain (and, for replicas, its memory).
function drawPhysicalGpus(gpus, colours) {
  return el('ul', { class: 'physical-gpus', 'aria-label': 'Tenants per physical GPU' },
    gpus.map((g) => el('li', { 'data-gpu-id': g.id,
      title: `${g.id} (${g.sharing}): ${g.pods.join(', ')}` },
    el('code', {}, shortId(g.id)), ` ${g.sharing}: `,
    g.tenants.map((t) => el('span', { class: `chip ${colourOf(t, colours)}` }, t)))));
}

// "3g.40gb, slices 0-3": a partitionable placement's profile and where on its GPU it sits.
function profileOf(d) {
  const slices = d.memorySlices || [];
  if (!slices.length) return d.profile || '';
  const first = slices[0];
  const last = slices[slices.length - 1];
  const contiguous = last - first + 1 === slices.length;
  const where = slices.length === 1 ? `slice ${first}`
    : `slices ${contiguous ? `${first}-${last}` : slices.join(', ')}`;
  return d.profile ? `${d.profile}, ${where}` : where;
}

// "memory 10Gi": what a share consumes, capacity by capacity.
function amountsOf(consumed) {
  return Object.entries(consumed || {}).map(([name, amount]) => `${name} ${amount}`).join(', ');
}

function drawDevices(devices, colours) {
  // A device several claims may hold at once: one chip per share (its claim and share ID on
  // hover), then what they consume of the device.
  const shares = (d) => [
    ...d.shares.map((s) => el('span', { class: `chip ${colourOf(s.tenant, colours)}`,
      'data-share': s.claim, title: `${s.claim}, share ${s.shareID}` },
    [s.tenant, amountsOf(s.consumedCapacity)].filter(Boolean).join(': '))),
    el('div', { class: 'hint' }, `shared, ${(d.capacity || [])
      .map((c) => `${c.name} ${c.consumed} of ${c.value}`).join(', ') || 'no capacity'} used`)];
  const heldBy = (d) => {
    if (d.tenant) {
      return el('span', { class: `chip ${colourOf(d.tenant, colours)}` },
        `${d.tenant} (${d.claim})`);
    }
    if ((d.shares || []).length) return shares(d);
    // A partition of a GPU whose counters held partitions use up.
    return d.blocked ? 'blocked by held partitions' : 'free';
  };
  return el('div', { class: 'table-wrap' }, el('table', { class: 'dra' },
    el('caption', { class: 'hint' }, 'DRA devices'),
    el('thead', {}, el('tr', {},
      ['Device', 'Type', 'Profile', 'Held by'].map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, devices.map((d) =>
      el('tr', { 'data-device': d.device, 'data-tenant': d.tenant },
        el('td', {}, d.device), el('td', {}, d.type), el('td', {}, profileOf(d)),
        el('td', {}, heldBy(d)))))));
}

// Fair sharing (the map's fairShare, absent without it): per tenant and quota item, what it is
// guaranteed, may hold, holds, borrows, lends, and its weighted fair share of the cluster.
function drawFairShare(shares, colours) {
  const section = $('#fair-share');
  section.hidden = !shares || !shares.length;
  if (section.hidden) return;
  const amount = (v) => (known(v) ? String(Math.round(v * 100) / 100) : '–');
  const head = el('tr', {}, ...['Tenant', 'Group', 'Weight', 'Resource', 'Guaranteed', 'Limit',
    'Holds', 'Borrows', 'Lends', 'Fair share'].map((h) => el('th', { scope: 'col' }, h)));
  const rows = shares.flatMap((s) => s.items.map((i) => el('tr',
    { 'data-tenant': s.tenant, 'data-resource': i.resource },
    el('td', {}, el('span', { class: `chip ${colourOf(s.tenant, colours)}` }, s.tenant)),
    el('td', {}, s.group || '–'), el('td', {}, String(s.weight)), el('td', {}, i.resource),
    el('td', {}, amount(i.guaranteed)), el('td', {}, amount(i.limit)),
    el('td', {}, amount(i.held)), el('td', { class: 'borrows' }, amount(i.borrowed)),
    el('td', { class: 'lends' }, amount(i.lent)), el('td', {}, amount(i.fairShare)))));
  section.replaceChildren(el('h2', {}, 'Fair sharing'),
    el('table', { class: 'fair-share' }, el('thead', {}, head), el('tbody', {}, ...rows)));
}

function draw() {
  if (!latest) return;
  const tenant = $('#tenant-filter').value;
  const pool = $('#pool-filter').value;
  const colours = tenantColours(latest.tenants);
  $('#legend').replaceChildren(
    ...latest.tenants.map((t) => el('li', { class: `chip ${colours.get(t)}` }, t)),
    el('li', { class: 'chip free-chip' }, 'free'));
  drawFairShare(latest.fairShare, colours);
  const shown = latest.nodes.filter((n) =>
    (!pool || n.pool === pool) && (!tenant || holdsTenant(n, tenant)));
  $('#nodes').replaceChildren(...shown.map((n) => drawNode(n, colours, tenant)));
  if (!shown.length) {
    $('#nodes').append(el('p', { class: 'hint' }, 'No GPU node matches the filters.'));
  }
}

// ---------------------------------------------------------------- loading

async function load() {
  if (loading) return;
  loading = true;
  try {
    const reply = await fetch('api/map', { cache: 'no-store' });
    if (reply.status === 404) {
      stopRefreshing();
      showError('There is no live map here: it is served by gpu-tenancy serve, at ' +
        '/ui/map.html on its operator (metrics) listener. gpu-tenancy ui serves the picker only.');
      return;
    }
    const body = await reply.json();
    if (!reply.ok) throw new Error(body.error || reply.statusText);
    latest = body;
    $('#error').hidden = true;
    const wanted = { tenant: $('#tenant-filter').value, pool: $('#pool-filter').value };
    fillFilter($('#tenant-filter'), body.tenants, 'all tenants', wanted.tenant);
    fillFilter($('#pool-filter'), body.pools, 'all pools', wanted.pool);
    draw();
    const count = body.nodes.length;
    $('#status').textContent =
      `${count} GPU node${count === 1 ? '' : 's'}, updated ${new Date().toLocaleTimeString()}`;
    document.body.dataset.loads = String(Number(document.body.dataset.loads || 0) + 1);
  } catch (e) {
    showError(`The map could not be loaded (${e.message}); showing the last one.`);
  } finally {
    loading = false;
  }
}

function showError(message) {
  $('#error').textContent = message;
  $('#error').hidden = false;
}

function stopRefreshing() {
  clearInterval(refreshTimer);
  refreshTimer = 0;
  $('#auto-refresh').checked = false;
}

function startRefreshing() {
  clearInterval(refreshTimer);
  // A hidden tab does not poll; it catches up when shown.
  refreshTimer = setInterval(() => { if (!document.hidden) load(); }, REFRESH_MS);
}

function start() {
  const filters = readFilters();
  fillFilter($('#tenant-filter'), [], 'all tenants', filters.tenant);
  fillFilter($('#pool-filter'), [], 'all pools', filters.pool);
  for (const id of ['#tenant-filter', '#pool-filter']) {
    $(id).addEventListener('change', () => { keepFilters(); draw(); });
  }
  $('#refresh').addEventListener('click', load);
  $('#auto-refresh').addEventListener('change', (event) => {
    if (event.target.checked) startRefreshing(); else stopRefreshing();
  });
  // A link with other filters opened in this tab changes only the hash.
  window.addEventListener('hashchange', () => {
    const wanted = readFilters();
    fillFilter($('#tenant-filter'), latest ? latest.tenants : [], 'all tenants', wanted.tenant);
    fillFilter($('#pool-filter'), latest ? latest.pools : [], 'all pools', wanted.pool);
    draw();
  });
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && refreshTimer) load();
  });
  startRefreshing();
  load();
}

start();

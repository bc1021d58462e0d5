'use strict';
// The sharing-mode picker. The form becomes the input of `gpu-tenancy plan` (the schema at the
// top of cmd/demo/plan-example.yaml), the planner answers it (GET api/plan), and this file lays
// the answer out. Every decision shown (mechanism, fan-out, MIG geometry, flags, configs) is the
// planner's: nothing here chooses or sizes anything, so the page and the CLI cannot disagree.

// GPUs without MIG are not in the catalog; the planner takes them by name plus memory.
const GPUS_WITHOUT_MIG = [
  { name: 'L4', memory: '24Gi' },
  { name: 'L40S', memory: '48Gi' },
  { name: 'A10', memory: '24Gi' },
];
const OTHER_GPU = 'other';

// What a first visit shows: one card and one workload, planned at once.
const STARTER_INPUT = {
  fleet: [{ node: 'gpu-a', gpu: 'H100-80GB', count: 1 }],
  workloads: [{ name: 'chat', tenant: 'acme', trust: 'untrusted', latency: 'sla',
    memory: { highWaterMark: '16Gi' } }],
};

const MODEL_FIELDS = ['parameters', 'bytesPerParameter', 'layers', 'kvHeads', 'headDim',
  'maxTokens', 'concurrency'];
const NUMBER_FIELDS = new Set(['bytesPerParameter', 'layers', 'kvHeads', 'headDim', 'maxTokens',
  'concurrency']);

let catalogModels = [];  // GET api/catalog: the MIG-capable models
let planRequest = 0;     // only the latest answer is drawn

// ---------------------------------------------------------------- form rows

function gpuOptions() {
  const withMig = el('optgroup', { label: 'With MIG (catalog)' },
    catalogModels.map((m) => el('option', { value: m.model }, m.model)));
  const withoutMig = el('optgroup', { label: 'Without MIG' },
    GPUS_WITHOUT_MIG.map((g) => el('option', { value: g.name }, `${g.name} (${g.memory})`)),
    el('option', { value: OTHER_GPU }, 'other…'));
  return [withMig, withoutMig];
}

function showGpuFields(row) {
  const choice = $('[name=gpu]', row).value;
  const preset = GPUS_WITHOUT_MIG.find((g) => g.name === choice);
  const memory = $('[name=memory]', row);
  $('.other-gpu', row).hidden = choice !== OTHER_GPU;
  $('.gpu-memory', row).hidden = !preset && choice !== OTHER_GPU;
  // A preset's memory follows the preset unless someone typed their own.
  if (preset && (!memory.value || memory.dataset.preset === memory.value)) {
    memory.value = preset.memory;
    memory.dataset.preset = preset.memory;
  }
}

function addFleetRow(entry = {}) {
  const row = $('#fleet-row').content.firstElementChild.cloneNode(true);
  const number = $$('.fleet-row').length + 1;
  $('[name=gpu]', row).append(...gpuOptions());
  // A new row's node name is a placeholder used when left blank; its GPU model is the one above.
  fallback($('[name=node]', row), `gpu-${String.fromCharCode(96 + Math.min(number, 26))}`);
  $('[name=node]', row).value = entry.node ?? '';
  $('[name=count]', row).value = entry.count ?? '';
  $('[name=zone]', row).value = entry.zone ?? '';
  const above = $$('.fleet-row').pop();
  const copied = entry.gpu === undefined && above ? readFleetRow(above) : {};
  const gpu = entry.gpu ?? copied.gpu ?? 'H100-80GB';
  const model = catalogModels.find((m) => m.model === gpu || (m.products || []).includes(gpu));
  const preset = GPUS_WITHOUT_MIG.find((g) => g.name === gpu);
  if (model) {
    $('[name=gpu]', row).value = model.model;
  } else if (preset) {
    $('[name=gpu]', row).value = preset.name;
  } else {
    $('[name=gpu]', row).value = OTHER_GPU;
    $('[name=otherGpu]', row).value = gpu;
  }
  $('[name=memory]', row).value = entry.memory ?? copied.memory ?? '';
  $('[name=gpu]', row).addEventListener('change', () => showGpuFields(row));
  $('.remove', row).addEventListener('click', () => removeRow(row, '#add-node'));
  $('#fleet-rows').append(row);
  showGpuFields(row);
  labelRows('.fleet-row', 'GPU node');
  return row;
}

function showMemoryFields(row) {
  const asModel = $('[name=memoryAs]', row).value === 'model';
  $('.memory-model', row).hidden = !asModel;
  $('.memory-peak', row).hidden = asModel;
}

function addWorkloadRow(workload = {}) {
  const row = $('#workload-row').content.firstElementChild.cloneNode(true);
  const number = $$('.workload-row').length + 1;
  fallback($('[name=name]', row), `workload-${number}`);
  $('[name=name]', row).value = workload.name ?? '';
  $('[name=tenant]', row).value = workload.tenant ?? '';
  $('[name=isolation]', row).value =
    workload.vmBoundary ? 'vm' : workload.trust === 'untrusted' ? 'tenant' : 'process';
  $('[name=latency]', row).value = workload.latency ?? 'sla';
  $('[name=kind]', row).value = workload.training ? 'training' : 'inference';
  $('[name=replicas]', row).value = workload.replicas ?? '';
  $('[name=mirrored]', row).checked = Boolean(workload.mirrored);
  $('[name=sharing]', row).value = workload.sharing ?? 'auto';
  const memory = workload.memory ?? {};
  $('[name=memoryAs]', row).value = memory.model ? 'model' : 'peak';
  $('[name=highWaterMark]', row).value = memory.highWaterMark ?? '';
  for (const field of MODEL_FIELDS) {
    const value = memory.model ? memory.model[field] : undefined;
    if (value !== undefined) $(`[name=${field}]`, row).value = String(value);
  }
  $('[name=memoryAs]', row).addEventListener('change', () => showMemoryFields(row));
  $('.remove', row).addEventListener('click', () => removeRow(row, '#add-workload'));
  $('#workload-rows').append(row);
  showMemoryFields(row);
  labelRows('.workload-row', 'workload');
  return row;
}

// A name left blank is its placeholder, so a new row plans without any typing.
function fallback(input, name) {
  input.placeholder = name;
  input.dataset.fallback = name;
}

// Each row's remove button says which row it removes, for people who cannot see the layout.
function labelRows(selector, what) {
  $$(selector).forEach((row, i) => {
    $('.remove', row).setAttribute('aria-label', `Remove ${what} ${i + 1}`);
  });
}

function removeRow(row, fallbackFocus) {
  const next = row.nextElementSibling || row.previousElementSibling;
  const selector = row.classList.contains('fleet-row') ? '.fleet-row' : '.workload-row';
  row.remove();
  labelRows(selector, selector === '.fleet-row' ? 'GPU node' : 'workload');
  (next ? $('input', next) : $(fallbackFocus)).focus();
}

// ---------------------------------------------------------------- form <-> plan input

function text(row, name) {
  const field = $(`[name=${name}]`, row);
  return field.value.trim() || field.dataset.fallback || '';
}

function readFleetRow(row) {
  const choice = text(row, 'gpu');
  const entry = { node: text(row, 'node') };
  if (choice === OTHER_GPU) {
    entry.gpu = text(row, 'otherGpu');
    entry.memory = text(row, 'memory');
  } else {
    entry.gpu = choice;
    if (GPUS_WITHOUT_MIG.some((g) => g.name === choice)) entry.memory = text(row, 'memory');
  }
  entry.count = Number(text(row, 'count') || 1);
  if (text(row, 'zone')) entry.zone = text(row, 'zone');
  return entry;
}

// Isolation requirement -> the planner's words: process = trusted, tenant = untrusted,
// VM = untrusted with a VM boundary.
function readWorkloadRow(row) {
  const isolation = text(row, 'isolation');
  const w = { name: text(row, 'name'), tenant: text(row, 'tenant'),
    trust: isolation === 'process' ? 'trusted' : 'untrusted', latency: text(row, 'latency') };
  if (isolation === 'vm') w.vmBoundary = true;
  if (text(row, 'kind') === 'training') w.training = true;
  const replicas = Number(text(row, 'replicas') || 1);
  if (replicas !== 1) w.replicas = replicas;
  if ($('[name=mirrored]', row).checked) w.mirrored = true;
  if (text(row, 'sharing') !== 'auto') w.sharing = text(row, 'sharing');
  if (text(row, 'memoryAs') === 'model') {
    const model = {};
    for (const field of MODEL_FIELDS) {
      const value = text(row, field);
      if (value) model[field] = NUMBER_FIELDS.has(field) ? Number(value) : value;
    }
    w.memory = { model };
  } else {
    w.memory = { highWaterMark: text(row, 'highWaterMark') };
  }
  return w;
}

function readForm() {
  return {
    fleet: $$('.fleet-row').map(readFleetRow),
    workloads: $$('.workload-row').map(readWorkloadRow),
  };
}

function fillForm(input) {
  $('#fleet-rows').replaceChildren();
  $('#workload-rows').replaceChildren();
  (input.fleet || []).forEach((entry) => addFleetRow(entry));
  (input.workloads || []).forEach((w) => addWorkloadRow(w));
}

// The plan input lives in the address (#plan=<JSON>), so a plan is shared as a link.
function inputFromAddress() {
  const match = location.hash.match(/^#plan=(.*)$/s);
  if (!match) return null;
  try {
    return JSON.parse(decodeURIComponent(match[1]));
  } catch (e) {
    showError(`The plan in this link could not be read (${e.message}); starting over.`);
    return null;
  }
}

function keepInAddress(inputText) {
  history.replaceState(null, '', `#plan=${encodeURIComponent(inputText)}`);
  $('#share-link').href = location.href;
  $('#share').hidden = false;
}

// ---------------------------------------------------------------- asking the planner

function showError(message) {
  $('#error').textContent = message;
  $('#error').hidden = false;
}

async function plan(input) {
  const inputText = JSON.stringify(input);
  keepInAddress(inputText);
  const request = ++planRequest;
  $('#status').textContent = 'Planning…';
  let reply;
  let body;
  try {
    reply = await fetch(`api/plan?input=${encodeURIComponent(inputText)}`);
    body = await reply.json();
  } catch (e) {
    body = { error: `the planner did not answer (${e.message})` };
  }
  if (request !== planRequest) return;
  if (!reply || !reply.ok) {
    $('#status').textContent = 'No plan.';
    $('#plan').hidden = true;
    showError(`The planner says: ${body.error || (reply && reply.statusText)}`);
    return;
  }
  $('#error').hidden = true;
  drawPlan(body, input);
  $('#status').textContent = `Planned: ${body.summary.text}.`;
}

// ---------------------------------------------------------------- drawing the plan

// Tenants get colours in the order the plan lists their workloads.
function tenantColours(workloads) {
  const colours = new Map();
  for (const w of workloads) {
    if (!colours.has(w.tenant)) colours.set(w.tenant, `tenant-${colours.size % 10}`);
  }
  return colours;
}

function drawPlan(doc, input) {
  const colours = tenantColours(doc.workloads);
  const tenantOf = new Map(doc.workloads.map((w) => [w.name, w.tenant]));
  drawFanOut(doc);
  drawFlags(doc.warnings);
  drawDecisions(doc.workloads, colours);
  $('#legend').replaceChildren(...[...colours].map(([tenant, colour]) =>
    el('li', { class: `chip ${colour}` }, tenant)));
  $('#gpus').replaceChildren(...doc.gpus.map((gpu) => drawGpu(gpu, colours, tenantOf)));
  drawOutputs(doc, input);
  $('#plan').hidden = false;
}

function drawFanOut(doc) {
  const s = doc.summary;
  $('#gpus-used').textContent = s.gpusUsed;
  $('#baseline-gpus').textContent = s.baselineGpus;
  $('#gpus-saved').textContent = s.gpusSaved;
  $('#tenants-per-gpu').textContent = s.maxTenantsPerGpu;
  $('#summary-text').textContent = `${s.text}.` +
    (s.optimal ? ` No packing can use fewer than ${s.lowerBound} GPUs, so this one is optimal.` :
      ` A lower bound is ${s.lowerBound} GPUs.`);
  $('#summary-baseline').textContent = s.baseline;
}

// The planner's warnings, each tagged with what kind of risk it names.
const FLAG_KINDS = [
  [/licensed per concurrent vGPU/, 'vGPU licensing'],
  [/no hardware boundary|has no MIG/, 'No hardware boundary'],
  [/fault domain/, 'Shared fault domain'],
  [/idle/, 'Idle GPUs'],
  [/canary/, 'Canary'],
];

function drawFlags(warnings) {
  const items = warnings.map((warning) => {
    const kind = (FLAG_KINDS.find(([pattern]) => pattern.test(warning)) || [null, 'Note'])[1];
    return el('li', { 'data-kind': kind }, el('span', { class: 'kind' }, `${kind}:`), warning);
  });
  if (!items.length) {
    items.push(el('li', { class: 'none' }, 'No flags: nothing in this plan needs a warning.'));
  }
  $('#flags').replaceChildren(...items);
}

function plural(n, one, many = `${one}s`) { return `${n} ${n === 1 ? one : many}`; }

function mechanismText(w) {
  switch (w.mechanism) {
    case 'mig': return `MIG ${w.profile} on ${w.gpu}`;
    case 'exclusive':
      return `${w.gpusPerReplica > 1 ? `${w.gpusPerReplica} whole GPUs` : 'whole GPU'} (${w.gpu})`;
    case 'timeslice': return `time-slicing on ${w.gpu}`;
    case 'mps': return `MPS on ${w.gpu}`;
    case 'vm': return 'VM boundary (not placed)';
    default: return w.mechanism;
  }
}

function drawDecisions(workloads, colours) {
  const rows = workloads.map((w) => {
    const mirrored = w.mirrored && w.replicaZones.length;
    const zones = mirrored ? ` (zones ${w.replicaZones.join(', ')})` : '';
    return el('tr', { 'data-workload': w.name },
      el('th', { scope: 'row' }, w.name),
      el('td', {}, el('span', { class: `chip ${colours.get(w.tenant)}` }, w.tenant),
        ` ${w.trust}, ${w.latency}`),
      el('td', { class: 'mechanism' }, mechanismText(w)),
      el('td', {}, w.replicas, zones),
      el('td', {}, w.memory.total),
      el('td', { class: 'rule' }, el('ul', {},
        w.reasons.map((r) => el('li', {}, r)),
        w.rounding ? el('li', {}, w.rounding) : null,
        w.warnings.map((r) => el('li', { class: 'warning' }, r)))));
  });
  $('#decisions tbody').replaceChildren(...rows);
}

function gcd(a, b) { return b ? gcd(b, a % b) : a; }

function holderLabel(holder) {
  return holder.canary ? 'canary (kept free)' : `${holder.workload} #${holder.replica}`;
}

function holderColour(holder, colours, tenantOf) {
  return holder.canary ? 'canary' : colours.get(tenantOf.get(holder.workload));
}

const GPU_USE_TEXT = { exclusive: 'whole GPU', timeslice: 'time-sliced', mps: 'MPS', idle: 'idle' };

function drawGpu(gpu, colours, tenantOf) {
  const zone = gpu.zone ? ` · zone ${gpu.zone}` : '';
  const where = el('strong', {}, `${gpu.node} · GPU ${gpu.index}${zone} · ${gpu.gpu}`);
  const figure = el('figure', { class: 'gpu', 'data-node': gpu.node, 'data-index': gpu.index,
    'data-use': gpu.use });
  if (gpu.use === 'mig') {
    const profiles = [...gpu.instances]
      .sort((a, b) => b.memorySlices - a.memorySlices || b.computeSlices - a.computeSlices)
      .map((i) => i.profile);
    figure.dataset.geometry = profiles.join('+');
    figure.append(el('figcaption', {}, where, el('br'),
      'MIG: ', el('span', { class: 'geometry' }, profiles.join(' + ') || 'no instances')),
    drawSlices(gpu, colours, tenantOf));
    return figure;
  }
  const memory = gpu.sharedMemoryMiB !== undefined && gpu.memoryMiB ?
    ` · ${gpu.sharedMemoryMiB} of ${gpu.memoryMiB} MiB declared` : '';
  figure.append(el('figcaption', {}, where, el('br'), GPU_USE_TEXT[gpu.use] || gpu.use, memory),
    el('div', { class: 'clients' }, gpu.clients.map((c) =>
      el('span', { class: `chip ${holderColour(c, colours, tenantOf)}` }, holderLabel(c)))));
  return figure;
}

// One grid for both rows: a column count divisible by the compute and the memory slices, so an
// instance's compute and memory cells sit under each other as on the card.
function drawSlices(gpu, colours, tenantOf) {
  const model = catalogModels.find((m) => m.model === gpu.gpu) ||
    { computeSlices: 7, memorySlices: 8 };
  const compute = model.computeSlices;
  const memory = model.memorySlices;
  const columns = compute * memory / gcd(compute, memory);
  const perCompute = columns / compute;
  const perMemory = columns / memory;
  const described = gpu.instances.map((i) => `${i.profile} for ${holderLabel(i)} at memory ` +
    `slices ${i.start}-${i.start + i.memorySlices - 1}`).join('; ') || 'empty';
  const grid = el('div', { class: 'slices', role: 'img', 'aria-label':
    `${gpu.node} GPU ${gpu.index}, ${compute} compute x ${memory} memory slices: ${described}` });
  grid.style.gridTemplateColumns = `repeat(${columns}, minmax(0, 1fr))`;
  const place = (node, row, from, span) => {
    node.style.gridRow = String(row);
    node.style.gridColumn = `${from + 1} / span ${span}`;
    grid.append(node);
  };
  for (let c = 0; c < compute; c++) {
    place(el('div', { class: 'slot-free' }), 1, c * perCompute, perCompute);
  }
  for (let m = 0; m < memory; m++) {
    place(el('div', { class: 'slot-free' }), 2, m * perMemory, perMemory);
  }
  for (const i of gpu.instances) {
    const colour = holderColour(i, colours, tenantOf);
    const tenant = i.canary ? 'canary' : tenantOf.get(i.workload);
    const title = `${i.profile}: ${holderLabel(i)}${i.canary ? '' : ` (tenant ${tenant})`}`;
    // A GPU instance's compute slices start where its memory slices do (placements are
    // memory-slice starts, and no profile runs past the last compute slice).
    const computeStart = Math.min(i.start, compute - i.computeSlices);
    place(el('div', { class: `slice ${colour}`, title }, `${i.computeSlices}g`), 1,
      computeStart * perCompute, i.computeSlices * perCompute);
    const slice = el('div', { class: `slice ${colour}`, title, 'data-profile': i.profile,
      'data-workload': i.workload ?? '' },
    el('span', { class: 'profile' }, i.profile), el('br'), tenant);
    place(slice, 2, i.start * perMemory, i.memorySlices * perMemory);
  }
  return el('div', {}, grid,
    el('div', { class: 'axis-labels', 'aria-hidden': 'true' },
      el('span', {}, `top: ${compute} compute slices`),
      el('span', {}, `bottom: ${memory} memory slices`)));
}

// ---------------------------------------------------------------- copyable outputs

// Strings YAML would read as something else (a number, a boolean, null, a mapping...) get
// double quotes; JSON's quoting is valid YAML.
function yamlScalar(value) {
  if (value === null) return 'null';
  if (typeof value !== 'string') return String(value);
  const plain = value !== '' && !/^\s|\s$/.test(value) &&
    !/^(~|null|true|false|yes|no|on|off|y|n|[-+]?\.inf|\.nan)$/i.test(value) &&
    !/^[-+]?\.?[0-9][0-9a-fA-FxXoO._:+-]*$/.test(value) &&
    !/^[-?:,[\]{}#&*!|>'"%@`]/.test(value) && !/: |\s#|:$/.test(value);
  return plain ? value : JSON.stringify(value);
}

function isEmptyCollection(value) {
  return typeof value === 'object' && value !== null && Object.keys(value).length === 0;
}

function yamlLines(value, indent) {
  const lines = [];
  const entries = Array.isArray(value) ? value.map((v) => [null, v]) : Object.entries(value);
  for (const [key, item] of entries) {
    const lead = key === null ? `${indent}- ` : `${indent}${yamlScalar(key)}:`;
    if (typeof item === 'object' && item !== null && !isEmptyCollection(item)) {
      const nested = yamlLines(item, `${indent}  `);
      if (key === null) {
        lines.push(lead + nested[0].slice(indent.length + 2), ...nested.slice(1));
      } else {
        lines.push(lead, ...nested);
      }
    } else {
      const empty = Array.isArray(item) ? '[]' : '{}';
      const scalar = isEmptyCollection(item) ? empty : yamlScalar(item);
      lines.push(key === null ? lead + scalar : `${lead} ${scalar}`);
    }
  }
  return lines;
}

function toYaml(value) { return `${yamlLines(value, '').join('\n')}\n`; }

function outputsOf(doc, input) {
  const outputs = [];
  outputs.push(['plan-input', 'Plan input (gpu-tenancy plan --input plan.yaml)', toYaml(input)]);
  if (doc.nvidiaSmi.length) {
    outputs.push(['nvidia-smi', 'nvidia-smi, per node', doc.nvidiaSmi.map((n) =>
      `# on ${n.node}\n${n.commands.join('\n')}\n`).join('\n')]);
  }
  if (doc.nodeLabels.length) {
    const commands = doc.nodeLabels.flatMap((n) => n.commands);
    outputs.push(['node-labels', 'Node labels', `${commands.join('\n')}\n`]);
  }
  if (!isEmptyCollection(doc.migParted['mig-configs'])) {
    outputs.push(['mig-parted', 'mig-parted config', toYaml(doc.migParted)]);
  }
  if (!isEmptyCollection(doc.devicePlugin.configs)) {
    outputs.push(['device-plugin',
      'Device-plugin sharing configs (one per name, chosen by nvidia.com/device-plugin.config)',
      toYaml(doc.devicePlugin.configs)]);
  }
  if (doc.resourceClaims.length) {
    outputs.push(['resource-claims', 'ResourceClaims (DRA)',
      doc.resourceClaims.map(toYaml).join('---\n')]);
  }
  if (doc.pods.length) {
    outputs.push(['pods', 'Pod snippets', doc.pods.map((p) =>
      `# ${p.workload}: tenant ${p.tenant}, ${plural(p.replicas, 'replica')}\n` +
      toYaml(p.podTemplate)).join('---\n')]);
  }
  outputs.push(['policy', "The policy's tenants section", toYaml(doc.policy)]);
  return outputs;
}

function drawOutputs(doc, input) {
  $('#outputs').replaceChildren(...outputsOf(doc, input).map(([id, title, body]) => {
    const code = el('code', {}, body);
    const copy = el('button', { type: 'button', 'aria-label': `Copy ${title}` }, 'Copy');
    copy.addEventListener('click', () => copyText(code, copy));
    return el('section', { class: 'output', 'data-output': id },
      el('header', {}, el('h3', {}, title), copy), el('pre', {}, code));
  }));
}

// The clipboard needs permission some browsers withhold; then the text is selected instead,
// ready for Ctrl+C.
function copyText(code, button) {
  const done = (what) => {
    button.textContent = what;
    setTimeout(() => { button.textContent = 'Copy'; }, 2000);
  };
  const select = () => {
    const range = document.createRange();
    range.selectNodeContents(code);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    done('Selected: press Ctrl+C');
  };
  if (!navigator.clipboard) {
    select();
    return;
  }
  navigator.clipboard.writeText(code.textContent).then(() => done('Copied'), select);
}

// ---------------------------------------------------------------- start

async function start() {
  $('#status').textContent = 'Loading the GPU catalog…';
  try {
    const reply = await fetch('api/catalog');
    const body = await reply.json();
    if (!reply.ok) throw new Error(body.error || reply.statusText);
    catalogModels = body.models;
  } catch (e) {
    showError(`The GPU catalog could not be loaded (${e.message}); ` +
      'only GPUs without MIG can be planned.');
  }
  $('#add-node').addEventListener('click', () => $('input', addFleetRow()).focus());
  $('#add-workload').addEventListener('click', () => $('input', addWorkloadRow()).focus());
  $('#plan-form').addEventListener('submit', (event) => {
    event.preventDefault();
    plan(readForm());
  });
  // A plan link opened in this tab changes only the hash (replaceState above does not fire this).
  window.addEventListener('hashchange', () => {
    const linked = inputFromAddress();
    if (linked) {
      fillForm(linked);
      plan(readForm());
    }
  });
  const input = inputFromAddress() || STARTER_INPUT;
  fillForm(input);
  await plan(readForm());
  document.body.dataset.ready = 'true';
}

start();

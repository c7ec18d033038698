// contactd viewer: the published scenes of the daemon that serves this page,
// drawn with three.js. Everything is fetched from that daemon: the scene
// list (/v1/scenes), each scene's updates as server-sent events
// (/v1/scenes/NAME/events) and each geometry's boundary mesh, once
// (/v1/geometry/ID/surface). World frame: z up (contactd's convention).
import * as THREE from 'three';
import { OrbitControls } from '/vendor/OrbitControls.js';

// Colours. The body colour is outside the pressure map's range of hues so
// that the two can be told apart (the browser test relies on it).
const BODY_COLOR = 0xe8803a;
const PLANE_COLOR = 0x8a8f99;
const TERRAIN_COLOR = 0x7d8a6a;
const ARROW_COLOR = 0xff2d55;
const PATCH_COLOR = 0x40e0ff;
// Reduced contacts: a colour far from the map's, the body's and the arrows'
// (the browser test counts its pixels). Speculative pairs: white, dashed.
const REDUCED_COLOR = 0xff00ff;
const SPECULATIVE_COLOR = 0xffffff;
// Viridis, 9 stops (low to high pressure).
const VIRIDIS = [
  [0x44, 0x01, 0x54], [0x47, 0x2c, 0x7a], [0x3b, 0x51, 0x8b], [0x2c, 0x71, 0x8e], [0x21, 0x90, 0x8d],
  [0x27, 0xad, 0x81], [0x5c, 0xc8, 0x63], [0xaa, 0xdc, 0x32], [0xfd, 0xe7, 0x25],
];

// The map's sRGB colour at t in [0, 1], components in [0, 1].
function colormap(t, out) {
  t = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(t)), f = t - i;
  for (let k = 0; k < 3; k++) out[k] = (VIRIDIS[i][k] * (1 - f) + VIRIDIS[i + 1][k] * f) / 255;
  return out;
}

// The same as a vertex colour: three.js works in linear RGB and writes
// sRGB, so the map's sRGB values are converted (else they come out pale).
const tmpColor = new THREE.Color();
function vertexColor(t, out) {
  colormap(t, out);
  tmpColor.setRGB(out[0], out[1], out[2], THREE.SRGBColorSpace);
  out[0] = tmpColor.r;
  out[1] = tmpColor.g;
  out[2] = tmpColor.b;
  return out;
}

const $ = (id) => document.getElementById(id);
const canvas = $('canvas');
const renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(window.devicePixelRatio || 1);
renderer.setClearColor(0x1d1f24);
const scene3 = new THREE.Scene();
const camera = new THREE.PerspectiveCamera(40, 1, 1e-4, 1e4);
camera.up.set(0, 0, 1);
camera.position.set(0.3, -0.45, 0.3);
const controls = new OrbitControls(camera, canvas);
controls.enableDamping = false;
scene3.add(new THREE.HemisphereLight(0xffffff, 0x404050, 2.0));
const sun = new THREE.DirectionalLight(0xffffff, 1.5);
sun.position.set(1, -2, 3);
scene3.add(sun);

// Groups the toggles switch on and off.
const groups = {};
const CONTACT_GROUPS = ['surfaces', 'arrows', 'patches', 'points', 'reduced', 'speculative'];
for (const g of ['bodies', ...CONTACT_GROUPS]) {
  groups[g] = new THREE.Group();
  scene3.add(groups[g]);
}

const state = {
  scene: null, source: null, paused: false, pending: null, last: null, version: 0, signedOut: false,
  bodies: new Map(), // body id -> { mesh, geometryId }
  fitted: false, radius: 0.1, center: new THREE.Vector3(), updates: 0, rateT0: performance.now(), rate: 0,
};

// ---- geometry cache: each id fetched once ------------------------------------
const geometries = new Map(); // id -> Promise<{kind, geometry}>

function fetchGeometry(id) {
  if (!geometries.has(id)) {
    geometries.set(id, fetch(`/v1/geometry/${id}/surface`).then(async (r) => {
      if (!r.ok) throw new Error(`geometry ${id}: HTTP ${r.status} ${await r.text()}`);
      const g = await r.json();
      if (g.kind === 'halfspace') return { kind: 'halfspace', geometry: null };
      const geo = new THREE.BufferGeometry();
      geo.setAttribute('position', new THREE.Float32BufferAttribute(g.v, 3));
      geo.setIndex(g.tri);
      geo.computeVertexNormals();
      geo.computeBoundingSphere();
      return { kind: g.kind, geometry: geo };
    }).catch((e) => { console.warn(e); return { kind: 'error', geometry: null }; }));
  }
  return geometries.get(id);
}

function poseMatrix(b) {
  const R = b.R, p = b.p;
  return new THREE.Matrix4().set(R[0], R[1], R[2], p[0], R[3], R[4], R[5], p[1], R[6], R[7], R[8], p[2], 0, 0, 0, 1);
}

function bodyMaterial(kind) {
  if (kind === 'halfspace')
    return new THREE.MeshLambertMaterial({ color: PLANE_COLOR, side: THREE.DoubleSide, polygonOffset: true,
                                           polygonOffsetFactor: 2, polygonOffsetUnits: 2 });
  if (kind === 'terrain')
    return new THREE.MeshLambertMaterial({ color: TERRAIN_COLOR, side: THREE.DoubleSide, polygonOffset: true,
                                           polygonOffsetFactor: 2, polygonOffsetUnits: 2 });
  // see-through, so that the contact surface inside a body shows
  return new THREE.MeshLambertMaterial({ color: BODY_COLOR, transparent: true, opacity: 0.45, depthWrite: false });
}

// A half space is drawn as a square of its boundary plane (z = 0 of its
// frame), sized to the scene and centred under it.
function halfspaceMesh(pose) {
  const size = 12 * state.radius;
  const c = state.center.clone().applyMatrix4(poseMatrix(pose).invert());
  const geo = new THREE.PlaneGeometry(size, size);
  geo.translate(c.x, c.y, 0);
  const m = new THREE.Mesh(geo, bodyMaterial('halfspace'));
  const grid = new THREE.GridHelper(size, 20, 0x5a5f69, 0x5a5f69);
  grid.rotation.x = Math.PI / 2; // GridHelper lies in xz; the plane is z = 0
  grid.position.set(c.x, c.y, 1e-5 * size);
  m.add(grid);
  m.userData.halfspace = true;
  return m;
}

async function updateBodies(snap) {
  const seen = new Set();
  for (const b of snap.bodies) {
    seen.add(b.id);
    let entry = state.bodies.get(b.id);
    if (!entry || entry.geometryId !== b.geometry) {
      if (entry) groups.bodies.remove(entry.mesh);
      entry = { mesh: null, geometryId: b.geometry, pose: b };
      state.bodies.set(b.id, entry);
      const g = await fetchGeometry(b.geometry);
      if (state.bodies.get(b.id) !== entry) continue; // replaced meanwhile
      if (g.kind === 'halfspace') entry.mesh = halfspaceMesh(b);
      else if (g.geometry) entry.mesh = new THREE.Mesh(g.geometry, bodyMaterial(g.kind));
      else continue;
      entry.mesh.matrixAutoUpdate = false;
      entry.mesh.userData.kind = g.kind;
      entry.mesh.renderOrder = g.kind === 'mesh' ? 2 : 0;
      groups.bodies.add(entry.mesh);
    }
    entry.pose = b;
    if (entry.mesh) entry.mesh.matrix.copy(poseMatrix(b));
  }
  for (const [id, e] of state.bodies)
    if (!seen.has(id)) {
      if (e.mesh) groups.bodies.remove(e.mesh);
      state.bodies.delete(id);
    }
}

// A body much larger than the smallest one is ground (a terrain, a bowl):
// drawn opaque like a terrain and left out of the view's fit.
const GROUND_RATIO = 5;

function markGround() {
  let rmin = Infinity;
  for (const e of state.bodies.values())
    if (e.mesh && !e.mesh.userData.halfspace && e.mesh.geometry.boundingSphere)
      rmin = Math.min(rmin, e.mesh.geometry.boundingSphere.radius);
  for (const e of state.bodies.values()) {
    if (!e.mesh || e.mesh.userData.halfspace || !e.mesh.geometry.boundingSphere) continue;
    const ground = e.mesh.userData.kind === 'terrain' || e.mesh.geometry.boundingSphere.radius > GROUND_RATIO * rmin;
    if (ground && !e.mesh.userData.ground) {
      e.mesh.material.dispose();
      e.mesh.material = bodyMaterial('terrain');
      e.mesh.renderOrder = 0;
    }
    e.mesh.userData.ground = ground;
  }
}

// The bodies' extent for the camera and plane size: half spaces and ground
// left out, unless there is nothing else.
function sceneBounds(withGround = false) {
  const box = new THREE.Box3();
  for (const e of state.bodies.values()) {
    if (!e.mesh || e.mesh.userData.halfspace || (!withGround && e.mesh.userData.ground)) continue;
    const s = e.mesh.geometry.boundingSphere;
    if (!s) continue;
    const c = s.center.clone().applyMatrix4(e.mesh.matrix);
    box.expandByPoint(c.clone().addScalar(s.radius));
    box.expandByPoint(c.clone().addScalar(-s.radius));
  }
  return box.isEmpty() && !withGround ? sceneBounds(true) : box;
}

function fitView() {
  markGround();
  const box = sceneBounds();
  if (box.isEmpty()) return false;
  const sphere = box.getBoundingSphere(new THREE.Sphere());
  state.radius = Math.max(sphere.radius, 1e-3);
  state.center.copy(sphere.center);
  const dir = new THREE.Vector3(0.55, -0.8, 0.5).normalize();
  camera.position.copy(sphere.center).addScaledVector(dir, 5 * state.radius);
  camera.near = state.radius * 1e-3;
  camera.far = state.radius * 1e3;
  camera.updateProjectionMatrix();
  controls.target.copy(sphere.center);
  controls.update();
  // resize half-space planes to the scene
  for (const e of state.bodies.values())
    if (e.mesh && e.mesh.userData.halfspace) {
      groups.bodies.remove(e.mesh);
      const m = halfspaceMesh(e.pose);
      m.matrixAutoUpdate = false;
      m.matrix.copy(poseMatrix(e.pose));
      e.mesh = m;
      groups.bodies.add(m);
    }
  return true;
}

// ---- surfaces, arrows, patches, point contacts -----------------------------------
function clearGroup(g) {
  for (const o of [...g.children]) {
    g.remove(o);
    o.traverse((x) => { if (x.geometry) x.geometry.dispose(); if (x.material) x.material.dispose(); });
  }
}

function surfaceMesh(s, pmax) {
  const geo = new THREE.BufferGeometry();
  geo.setAttribute('position', new THREE.Float32BufferAttribute(s.v, 3));
  const col = new Float32Array(s.p.length * 3), c = [0, 0, 0];
  for (let i = 0; i < s.p.length; i++) {
    vertexColor(pmax > 0 ? s.p[i] / pmax : 0, c);
    col.set(c, 3 * i);
  }
  geo.setAttribute('color', new THREE.Float32BufferAttribute(col, 3));
  geo.setIndex(s.tri);
  // Unlit: the colours are the map's, whatever the light. Drawn after the
  // see-through bodies (which write no depth), so a surface inside a body
  // shows in its own colours; the opaque plane still hides what is below it.
  const mat = new THREE.MeshBasicMaterial({ vertexColors: true, side: THREE.DoubleSide, polygonOffset: true,
                                            polygonOffsetFactor: -2, polygonOffsetUnits: -2,
                                            transparent: true, opacity: 1 });
  const m = new THREE.Mesh(geo, mat);
  m.renderOrder = 3;
  return m;
}

function arrow(point, force, scale, color, radius) {
  const f = new THREE.Vector3(...force), len = f.length() * scale;
  if (!(len > 0)) return null;
  const a = new THREE.ArrowHelper(f.normalize(), new THREE.Vector3(...point), len, color, 0.25 * len, 0.12 * len);
  a.line.material.linewidth = radius;
  for (const part of [a.line, a.cone]) { // over the see-through bodies, like the surfaces
    part.material.transparent = true;
    part.renderOrder = 4;
  }
  return a;
}

function updateContacts(snap) {
  for (const g of CONTACT_GROUPS) clearGroup(groups[g]);
  let pmax = 0, fmax = 0;
  for (const p of snap.pairs) {
    if (p.surface) for (const x of p.surface.p) pmax = Math.max(pmax, x);
    fmax = Math.max(fmax, Math.hypot(...p.force));
  }
  const scale = fmax > 0 ? (1.2 * state.radius) / fmax : 0;
  for (const p of snap.pairs) {
    if (p.speculative) {
      drawSpeculative(p);
      continue;
    }
    if (p.surface) groups.surfaces.add(surfaceMesh(p.surface, pmax));
    for (const q of p.reduced || []) drawReduced(q, scale);
    const a = arrow(p.point, p.force, scale, ARROW_COLOR, 2);
    if (a) groups.arrows.add(a);
    for (const q of p.patches || []) {
      const dot = new THREE.Mesh(new THREE.SphereGeometry(0.03 * state.radius, 12, 8),
                                 new THREE.MeshBasicMaterial({ color: PATCH_COLOR }));
      dot.position.set(...q.point);
      groups.patches.add(dot);
      const qa = arrow(q.point, q.force, scale, PATCH_COLOR, 1);
      if (qa) groups.patches.add(qa);
    }
    if (p.points && p.points.length) {
      const pos = new Float32Array(p.points.length * 3), col = new Float32Array(p.points.length * 3), c = [0, 0, 0];
      p.points.forEach((q, i) => { pos.set(q.x, 3 * i); col.set(vertexColor(pmax > 0 ? q.p / pmax : 0, c), 3 * i); });
      const geo = new THREE.BufferGeometry();
      geo.setAttribute('position', new THREE.Float32BufferAttribute(pos, 3));
      geo.setAttribute('color', new THREE.Float32BufferAttribute(col, 3));
      groups.points.add(new THREE.Points(geo, new THREE.PointsMaterial({ size: 5, sizeAttenuation: false,
                                                                         vertexColors: true })));
    }
  }
  drawColorbar(pmax);
  countDrawn();
}

// What is drawn, for tests: reduced contacts and speculative pairs, each
// counted only while its toggle shows it.
function countDrawn() {
  const shown = (g) => (groups[g].visible ? groups[g].children.filter((o) => o.userData.marker).length : 0);
  document.body.dataset.reduced = shown('reduced');
  document.body.dataset.speculative = shown('speculative');
}

// A reduced contact: a dot at its point, an arrow of its force (the
// pair's scale). Drawn over everything (markers, like the patch dots).
function drawReduced(q, scale) {
  const dot = new THREE.Mesh(new THREE.SphereGeometry(0.025 * state.radius, 12, 8),
                             new THREE.MeshBasicMaterial({ color: REDUCED_COLOR, depthTest: false }));
  dot.position.set(...q.x);
  dot.renderOrder = 5;
  dot.userData.marker = true;
  groups.reduced.add(dot);
  const a = arrow(q.x, q.force, scale, REDUCED_COLOR, 1);
  if (a) groups.reduced.add(a);
}

// A speculative pair (apart, within the margins): no force. Its speculative
// surface, if sent, as a white wireframe; a ring at the closest point and a
// dashed segment along the normal as long as the separation (how far the
// bodies must approach to touch).
function drawSpeculative(p) {
  const sp = p.speculative;
  if (p.surface) {
    const geo = new THREE.BufferGeometry();
    geo.setAttribute('position', new THREE.Float32BufferAttribute(p.surface.v, 3));
    geo.setIndex(p.surface.tri);
    groups.speculative.add(new THREE.Mesh(geo, new THREE.MeshBasicMaterial({
      color: SPECULATIVE_COLOR, wireframe: true, transparent: true, opacity: 0.5 })));
  }
  const x = new THREE.Vector3(...sp.point), n = new THREE.Vector3(...sp.normal).normalize();
  const len = Math.max(sp.separation, 0.05 * state.radius);
  const geo = new THREE.BufferGeometry().setFromPoints([x, x.clone().addScaledVector(n, len)]);
  const line = new THREE.Line(geo, new THREE.LineDashedMaterial({
    color: SPECULATIVE_COLOR, dashSize: len / 6, gapSize: len / 8, depthTest: false }));
  line.computeLineDistances();
  line.renderOrder = 5;
  line.userData.marker = true;
  groups.speculative.add(line);
  const ring = new THREE.Mesh(new THREE.RingGeometry(0.03 * state.radius, 0.045 * state.radius, 24),
                              new THREE.MeshBasicMaterial({ color: SPECULATIVE_COLOR, side: THREE.DoubleSide,
                                                            depthTest: false }));
  ring.position.copy(x);
  ring.quaternion.setFromUnitVectors(new THREE.Vector3(0, 0, 1), n);
  ring.renderOrder = 5;
  groups.speculative.add(ring);
}

// ---- panel --------------------------------------------------------------------
function fmt(x) { return Number.isFinite(x) ? x.toPrecision(4) : '–'; }

function drawColorbar(pmax) {
  const bar = $('bar'), ctx = bar.getContext('2d'), c = [0, 0, 0];
  for (let x = 0; x < bar.width; x++) {
    colormap(x / (bar.width - 1), c);
    ctx.fillStyle = `rgb(${c[0] * 255},${c[1] * 255},${c[2] * 255})`;
    ctx.fillRect(x, 0, 1, bar.height);
  }
  $('pmin').textContent = '0';
  $('pmid').textContent = pmax > 0 ? (pmax / 2).toPrecision(3) : '';
  $('pmax').textContent = pmax > 0 ? pmax.toPrecision(3) : '–';
}

function updateTable(snap) {
  const body = $('pairs').tBodies[0];
  body.textContent = '';
  let energy = false;
  for (const p of snap.pairs) {
    const tr = document.createElement('tr');
    tr.className = 'pair';
    tr.dataset.a = p.a;
    tr.dataset.b = p.b;
    tr.dataset.status = p.status;
    if (p.speculative) tr.classList.add('speculative');
    const cells = [[`${p.a}–${p.b} ${p.status}`, 'name'], [fmt(Math.hypot(...p.force)), 'force'],
                   [fmt(p.area), 'area'], [String(p.faces), 'faces'],
                   [p.strainEnergy !== undefined ? fmt(p.strainEnergy) : '', 'energy']];
    if (p.speculative) cells[0][0] += ` gap ${fmt(p.speculative.separation)} m`;
    if (p.strainEnergy !== undefined) energy = true;
    for (const [text, cls] of cells) {
      const td = document.createElement('td');
      td.textContent = text;
      td.className = cls;
      tr.appendChild(td);
    }
    tr.title = p.speculative
      ? `apart by ${fmt(p.speculative.separation)} m along (${p.speculative.normal.map(fmt).join(', ')}); ` +
        `stiffness at touch ${fmt(p.speculative.stiffness)} N/m`
      : `force on A (${p.force.map(fmt).join(', ')}) N at (${p.point.map(fmt).join(', ')}) m` +
        (p.reduced ? `; ${p.reduced.length} reduced contacts` : '');
    body.appendChild(tr);
  }
  $('pairs').classList.toggle('has-energy', energy);
}

function setStatus() {
  const s = state.last;
  $('status').textContent = state.signedOut
    ? 'not signed in, or the session expired: open this page once with ?token=<your token>'
    : !state.scene ? 'no published scene yet'
    : !s ? `${state.scene}: waiting for a result`
    : `${state.scene} v${s.version} · ${s.pairs.length} pairs · ${state.rate.toFixed(0)} updates/s` +
      (state.paused ? ' · paused' : '');
  document.body.dataset.version = s ? s.version : 0; // for tests
}

async function apply(snap) {
  state.last = snap;
  await updateBodies(snap);
  if (!state.fitted) state.fitted = fitView();
  updateContacts(snap);
  updateTable(snap);
  $('empty').style.display = 'none';
  setStatus();
  document.body.dataset.applied = snap.version; // the version now drawn (tests wait on it)
}

// Updates are applied one at a time; while one is applied (or paused) only
// the newest waiting one is kept.
let applying = false;
async function offer(snap) {
  state.pending = snap;
  if (applying || state.paused) return;
  applying = true;
  while (state.pending && !state.paused) {
    const s = state.pending;
    state.pending = null;
    await apply(s);
  }
  applying = false;
}

// ---- scenes -----------------------------------------------------------------------
function openScene(name) {
  if (state.source) state.source.close();
  state.scene = name;
  state.last = null;
  state.fitted = false;
  for (const e of state.bodies.values()) if (e.mesh) groups.bodies.remove(e.mesh);
  state.bodies.clear();
  for (const g of CONTACT_GROUPS) clearGroup(groups[g]);
  history.replaceState(null, '', `#${name}`);
  const src = new EventSource(`/v1/scenes/${encodeURIComponent(name)}/events`);
  src.addEventListener('scene', (ev) => {
    state.updates++;
    offer(JSON.parse(ev.data));
  });
  src.onerror = () => { $('status').textContent = `${name}: connection lost, retrying…`; };
  state.source = src;
  setStatus();
}

async function refreshScenes() {
  let list = [];
  try {
    const r = await fetch('/v1/scenes');
    state.signedOut = r.status === 401; // principals are set and this browser has no (live) session
    if (state.signedOut) {
      setStatus();
      return;
    }
    // a principal of every tenant may see two tenants' scenes of one name: listed once
    list = [...new Set((await r.json()).scenes.map((s) => s.name))].sort();
  } catch (e) { return; }
  const sel = $('scene'), have = [...sel.options].map((o) => o.value);
  if (have.join('\n') !== list.join('\n')) {
    sel.textContent = '';
    for (const n of list) sel.add(new Option(n, n));
  }
  const want = decodeURIComponent(location.hash.slice(1));
  if (!state.scene && list.length) openScene(list.includes(want) ? want : list[0]);
  if (state.scene) sel.value = state.scene;
  if (!list.length) setStatus();
}

// ---- controls and the render loop -----------------------------------------------
$('scene').addEventListener('change', (e) => openScene(e.target.value));
$('pause').addEventListener('click', () => {
  state.paused = !state.paused;
  $('pause').textContent = state.paused ? 'resume' : 'pause';
  setStatus();
  if (!state.paused && state.pending) offer(state.pending);
});
$('fit').addEventListener('click', () => fitView());
for (const g of Object.keys(groups)) {
  const box = $(`show-${g}`);
  groups[g].visible = box.checked;
  box.addEventListener('change', () => {
    groups[g].visible = box.checked;
    countDrawn();
  });
}

function resize() {
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== Math.floor(w * renderer.getPixelRatio()) || canvas.height !== Math.floor(h * renderer.getPixelRatio())) {
    renderer.setSize(w, h, false);
    camera.aspect = w / Math.max(h, 1);
    camera.updateProjectionMatrix();
  }
}

function frame() {
  resize();
  const now = performance.now();
  if (now - state.rateT0 > 1000) {
    state.rate = (state.updates * 1000) / (now - state.rateT0);
    state.updates = 0;
    state.rateT0 = now;
    setStatus();
  }
  controls.update();
  renderer.render(scene3, camera);
  requestAnimationFrame(frame);
}

drawColorbar(0);
refreshScenes();
setInterval(refreshScenes, 2000);
window.addEventListener('hashchange', () => {
  const want = decodeURIComponent(location.hash.slice(1));
  if (want && want !== state.scene) openScene(want);
});
requestAnimationFrame(frame);

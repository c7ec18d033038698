/* cc_scene.c — scene files (see cc_scene.h and client/README.md). */
#include "cc_scene.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int err_at(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

static char *read_all(FILE *f, size_t *len) {
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  if (!b) return NULL;
  size_t k;
  while ((k = fread(b + n, 1, cap - n - 1, f)) > 0) {
    n += k;
    if (n + 1 >= cap) {
      char *nb = realloc(b, cap * 2);
      if (!nb) {
        free(b);
        return NULL;
      }
      b = nb;
      cap *= 2;
    }
  }
  b[n] = 0;
  if (len) *len = n;
  return b;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* Number member; 0 = absent (keeps *v), 1 = read, -1 = wrong type. */
static int get_num(const cJSON *o, const char *key, double *v) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!it) return 0;
  if (!cJSON_IsNumber(it)) return -1;
  *v = it->valuedouble;
  return 1;
}

static int get_vec(const cJSON *o, const char *key, double *v, int n) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!it) return 0;
  if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != n) return -1;
  for (int i = 0; i < n; i++) {
    const cJSON *e = cJSON_GetArrayItem(it, i);
    if (!cJSON_IsNumber(e)) return -1;
    v[i] = e->valuedouble;
  }
  return 1;
}

static int get_bool(const cJSON *o, const char *key, int *v) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!it) return 0;
  if (!cJSON_IsBool(it)) return -1;
  *v = cJSON_IsTrue(it);
  return 1;
}

static void rpy_to_quat(const double rpy_deg[3], double q[4]) {
  double r = rpy_deg[0] * M_PI / 360, p = rpy_deg[1] * M_PI / 360, y = rpy_deg[2] * M_PI / 360;
  double cr = cos(r), sr = sin(r), cp = cos(p), sp = sin(p), cy = cos(y), sy = sin(y);
  q[0] = cr * cp * cy + sr * sp * sy;
  q[1] = sr * cp * cy - cr * sp * sy;
  q[2] = cr * sp * cy + sr * cp * sy;
  q[3] = cr * cp * sy - sr * sp * cy;
}

/* Pose/velocity members of a body or frame entry into st. */
static int parse_state(const cJSON *o, const char *path, cc_body *st, char *err, size_t errlen) {
  if (get_vec(o, "position", st->p, 3) < 0)
    return err_at(err, errlen, "%s.position: expected an array of 3 numbers", path);
  int rq = get_vec(o, "orientation", st->q, 4);
  if (rq < 0) return err_at(err, errlen, "%s.orientation: expected a quaternion [w, x, y, z]", path);
  double rpy[3];
  int rr = get_vec(o, "rpy_deg", rpy, 3);
  if (rr < 0) return err_at(err, errlen, "%s.rpy_deg: expected [roll, pitch, yaw] in degrees", path);
  if (rr > 0 && rq > 0) return err_at(err, errlen, "%s: give orientation or rpy_deg, not both", path);
  if (rr > 0) rpy_to_quat(rpy, st->q);
  if (get_vec(o, "angular_velocity", st->w, 3) < 0)
    return err_at(err, errlen, "%s.angular_velocity: expected an array of 3 numbers", path);
  if (get_vec(o, "linear_velocity", st->v, 3) < 0)
    return err_at(err, errlen, "%s.linear_velocity: expected an array of 3 numbers", path);
  return 0;
}

static int parse_geom(const cJSON *g, const char *base_dir, cc_scene_geom *sg, char *err,
                      size_t errlen) {
  char path[300];
  snprintf(path, sizeof path, "geometries.%s", sg->name);
  if (!cJSON_IsObject(g)) return err_at(err, errlen, "%s: expected an object", path);
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(g, "id");
  if (id) {
    if (!cJSON_IsString(id) || !*id->valuestring || strlen(id->valuestring) >= CC_ID_MAX)
      return err_at(err, errlen, "%s.id: expected a geometry id string", path);
    snprintf(sg->id, sizeof sg->id, "%s", id->valuestring);
    sg->preset = 1;
    return 0;
  }
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(g, "shape");
  if (!cJSON_IsString(shape))
    return err_at(err, errlen,
                  "%s.shape: expected one of sphere, box, cylinder, capsule, ellipsoid, "
                  "half-space, mesh (or give \"id\")", path);
  cc_shape *s = &sg->shape;
  s->kind = cc_shape_kind_parse(shape->valuestring);
  if (!s->kind) return err_at(err, errlen, "%s.shape: unknown shape \"%s\"", path, shape->valuestring);
  s->name = sg->name;
  double v3[3];
  switch (s->kind) {
    case CC_SHAPE_SPHERE:
      if (get_num(g, "radius", &s->a) != 1) return err_at(err, errlen, "%s.radius: expected a number", path);
      break;
    case CC_SHAPE_BOX:
      if (get_vec(g, "size", v3, 3) != 1)
        return err_at(err, errlen, "%s.size: expected [x, y, z] full edge lengths", path);
      s->a = v3[0], s->b = v3[1], s->c = v3[2];
      break;
    case CC_SHAPE_CYLINDER:
    case CC_SHAPE_CAPSULE:
      if (get_num(g, "radius", &s->a) != 1) return err_at(err, errlen, "%s.radius: expected a number", path);
      if (get_num(g, "length", &s->b) != 1) return err_at(err, errlen, "%s.length: expected a number", path);
      break;
    case CC_SHAPE_ELLIPSOID:
      if (get_vec(g, "semi_axes", v3, 3) != 1)
        return err_at(err, errlen, "%s.semi_axes: expected [a, b, c]", path);
      s->a = v3[0], s->b = v3[1], s->c = v3[2];
      break;
    case CC_SHAPE_HALF_SPACE: break;
    case CC_SHAPE_HEIGHT_FIELD:
      return err_at(err, errlen,
                    "%s.shape: a heightfield is registered with `contactctl register heightfield FILE`; give its "
                    "\"id\" here", path);
    case CC_SHAPE_MESH_FILE: {
      const cJSON *f = cJSON_GetObjectItemCaseSensitive(g, "file");
      if (!cJSON_IsString(f)) return err_at(err, errlen, "%s.file: expected a file name", path);
      char full[4096];
      if (f->valuestring[0] == '/' || !base_dir || !*base_dir)
        snprintf(full, sizeof full, "%s", f->valuestring);
      else
        snprintf(full, sizeof full, "%s/%s", base_dir, f->valuestring);
      FILE *fp = fopen(full, "rb");
      if (!fp) return err_at(err, errlen, "%s.file: cannot open \"%s\"", path, full);
      size_t n = 0;
      sg->file_data = read_all(fp, &n);
      fclose(fp);
      if (!sg->file_data) return err_at(err, errlen, "%s.file: cannot read \"%s\"", path, full);
      sg->file_path = xstrdup(full);
      s->data = sg->file_data;
      s->size = n;
      s->name = sg->file_path;
      const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(g, "format");
      if (fmt) {
        s->format = cJSON_IsString(fmt) ? cc_mesh_format_parse(fmt->valuestring) : -1;
        if (s->format < 0) return err_at(err, errlen, "%s.format: expected auto, obj, stl, vtk or msh", path);
      }
      break;
    }
  }
  if (get_bool(g, "rigid", &s->rigid) < 0) return err_at(err, errlen, "%s.rigid: expected true or false", path);
  static const char *const nums[] = {"modulus", "hint", "slab", "dissipation", "friction", "margin"};
  double *dst[] = {&s->modulus, &s->hint, &s->slab, &s->dissipation, &s->friction, &s->margin};
  for (int i = 0; i < 6; i++)
    if (get_num(g, nums[i], dst[i]) < 0) return err_at(err, errlen, "%s.%s: expected a number", path, nums[i]);
  return 0;
}

static int parse_enum(const cJSON *o, const char *key, const char *const *names, int n, int *out,
                      char *err, size_t errlen) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!it) return 0;
  for (int i = 0; cJSON_IsString(it) && i < n; i++)
    if (names[i] && strcmp(it->valuestring, names[i]) == 0) {
      *out = i;
      return 0;
    }
  char list[256] = "";
  for (int i = 0; i < n; i++)
    if (names[i]) {
      strncat(list, names[i], sizeof list - strlen(list) - 3);
      strcat(list, " ");
    }
  return err_at(err, errlen, "options.%s: expected one of: %s", key, list);
}

/* v is an integer in [0, 2^32 - 1], so (uint32_t)v is defined and exact. */
static int is_u32(double v) { return v >= 0 && v <= 4294967295.0 && v == floor(v); }

static int parse_pair(const cc_scene *s, const cJSON *p, const char *path, uint32_t out[2], char *err,
                      size_t errlen) {
  if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2)
    return err_at(err, errlen, "%s: expected [A, B] (body names or ids)", path);
  for (int k = 0; k < 2; k++) {
    const cJSON *e = cJSON_GetArrayItem(p, k);
    int bi = -1;
    if (cJSON_IsString(e)) bi = cc_scene_find_body(s, e->valuestring);
    else if (cJSON_IsNumber(e)) {
      /* compared as doubles: an id out of uint32 range matches no body */
      for (size_t i = 0; i < s->nbodies; i++)
        if ((double)s->bodies[i].state.id == e->valuedouble) bi = (int)i;
    }
    if (bi < 0) return err_at(err, errlen, "%s[%d]: no such body", path, k);
    out[k] = s->bodies[bi].state.id;
  }
  return 0;
}

/* "geometries": {name: geometry, ...}. */
static int parse_geoms(const cJSON *root, const char *base_dir, cc_scene *s, char *err, size_t errlen) {
  const cJSON *gs = cJSON_GetObjectItemCaseSensitive(root, "geometries");
  if (!cJSON_IsObject(gs)) return err_at(err, errlen, "geometries: expected an object {name: geometry}");
  s->ngeoms = (size_t)cJSON_GetArraySize(gs);
  s->geoms = calloc(s->ngeoms ? s->ngeoms : 1, sizeof *s->geoms);
  size_t gi = 0;
  for (const cJSON *g = gs->child; g; g = g->next, gi++) {
    s->geoms[gi].name = xstrdup(g->string);
    if (parse_geom(g, base_dir, &s->geoms[gi], err, errlen)) return -1;
  }
  return 0;
}

/* A body's optional "material" and "filter". */
static int parse_body_extras(const cJSON *b, const char *path, cc_scene_body *sb, char *err, size_t errlen) {
  const cJSON *mat = cJSON_GetObjectItemCaseSensitive(b, "material");
  if (mat) {
    sb->has_material = 1;
    if (!cJSON_IsObject(mat) || get_num(mat, "dissipation", &sb->dissipation) < 0 ||
        get_num(mat, "friction", &sb->friction) < 0)
      return err_at(err, errlen, "%s.material: expected {\"dissipation\": d, \"friction\": mu}", path);
  }
  const cJSON *flt = cJSON_GetObjectItemCaseSensitive(b, "filter");
  if (flt) {
    double gr = 0xffffffffu, mk = 0xffffffffu;
    sb->has_filter = 1;
    if (!cJSON_IsObject(flt) || get_num(flt, "group", &gr) < 0 || get_num(flt, "mask", &mk) < 0)
      return err_at(err, errlen, "%s.filter: expected {\"group\": bits, \"mask\": bits}", path);
    if (!is_u32(gr) || !is_u32(mk))
      return err_at(err, errlen, "%s.filter.%s: expected an unsigned 32-bit integer", path, is_u32(gr) ? "mask" : "group");
    sb->group = (uint32_t)gr;
    sb->mask = (uint32_t)mk;
  }
  return 0;
}

/* bodies[i]: its geometry, name, id (unique with the name among bodies[0..i)),
 * state, material and filter. */
static int parse_body(cc_scene *s, const cJSON *b, size_t i, char *err, size_t errlen) {
  char path[64];
  snprintf(path, sizeof path, "bodies[%zu]", i);
  cc_scene_body *sb = &s->bodies[i];
  if (!cJSON_IsObject(b)) return err_at(err, errlen, "%s: expected an object", path);
  const cJSON *geom = cJSON_GetObjectItemCaseSensitive(b, "geometry");
  if (!cJSON_IsString(geom)) return err_at(err, errlen, "%s.geometry: expected the name of a geometry", path);
  sb->geom = -1;
  for (size_t k = 0; k < s->ngeoms; k++)
    if (strcmp(s->geoms[k].name, geom->valuestring) == 0) sb->geom = (int)k;
  if (sb->geom < 0) return err_at(err, errlen, "%s.geometry: no geometry named \"%s\"", path, geom->valuestring);
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(b, "name");
  char dflt[32];
  snprintf(dflt, sizeof dflt, "body%zu", i + 1);
  sb->name = xstrdup(cJSON_IsString(name) ? name->valuestring : dflt);
  double id = (double)(i + 1);
  if (get_num(b, "id", &id) < 0 || id < 0 || id > 4294967295.0 || id != floor(id))
    return err_at(err, errlen, "%s.id: expected an unsigned integer", path);
  sb->state.id = (uint32_t)id;
  for (size_t k = 0; k < i; k++)
    if (s->bodies[k].state.id == sb->state.id || strcmp(s->bodies[k].name, sb->name) == 0)
      return err_at(err, errlen, "%s: id %u or name \"%s\" already used by bodies[%zu]", path, sb->state.id,
                    sb->name, k);
  if (parse_state(b, path, &sb->state, err, errlen)) return -1;
  return parse_body_extras(b, path, sb, err, errlen);
}

static int parse_bodies(const cJSON *root, cc_scene *s, char *err, size_t errlen) {
  const cJSON *bs = cJSON_GetObjectItemCaseSensitive(root, "bodies");
  if (!cJSON_IsArray(bs) || cJSON_GetArraySize(bs) == 0)
    return err_at(err, errlen, "bodies: expected a non-empty array");
  s->nbodies = (size_t)cJSON_GetArraySize(bs);
  s->bodies = calloc(s->nbodies, sizeof *s->bodies);
  for (size_t i = 0; i < s->nbodies; i++)
    if (parse_body(s, cJSON_GetArrayItem(bs, (int)i), i, err, errlen)) return -1;
  return 0;
}

/* "pairs": "all" (or absent), {"all": {"margin": m, "exclude": [...]}} or
 * [[A, B], ...] (empty: all). */
static int parse_pairs(const cJSON *root, cc_scene *s, char *err, size_t errlen) {
  const cJSON *ps = cJSON_GetObjectItemCaseSensitive(root, "pairs");
  if (!ps || (cJSON_IsString(ps) && strcmp(ps->valuestring, "all") == 0)) {
    s->all_pairs = 1;
  } else if (cJSON_IsObject(ps)) {
    s->all_pairs = 1;
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(ps, "all");
    if (!cJSON_IsObject(all) || get_num(all, "margin", &s->margin) < 0)
      return err_at(err, errlen,
                    "pairs: expected \"all\", {\"all\": {\"margin\": m, \"exclude\": [[A, B], ...]}} or [[A, B], ...]");
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(all, "exclude");
    if (ex) {
      if (!cJSON_IsArray(ex)) return err_at(err, errlen, "pairs.all.exclude: expected [[A, B], ...]");
      s->nexclude = (size_t)cJSON_GetArraySize(ex);
      s->exclude = calloc(s->nexclude ? s->nexclude : 1, sizeof *s->exclude);
      for (size_t i = 0; i < s->nexclude; i++) {
        char path[64];
        snprintf(path, sizeof path, "pairs.all.exclude[%zu]", i);
        if (parse_pair(s, cJSON_GetArrayItem(ex, (int)i), path, s->exclude[i], err, errlen)) return -1;
      }
    }
  } else if (cJSON_IsArray(ps)) {
    s->npairs = (size_t)cJSON_GetArraySize(ps);
    s->pairs = calloc(s->npairs ? s->npairs : 1, sizeof *s->pairs);
    for (size_t i = 0; i < s->npairs; i++) {
      char path[64];
      snprintf(path, sizeof path, "pairs[%zu]", i);
      if (parse_pair(s, cJSON_GetArrayItem(ps, (int)i), path, s->pairs[i], err, errlen)) return -1;
    }
    if (s->npairs == 0) s->all_pairs = 1;
  } else {
    return err_at(err, errlen, "pairs: expected \"all\", {\"all\": {...}} or [[A, B], ...]");
  }
  return 0;
}

/* "options": the query options a scene may set. */
static int parse_options(const cJSON *root, cc_scene *s, char *err, size_t errlen) {
  const cJSON *op = cJSON_GetObjectItemCaseSensitive(root, "options");
  if (!op) return 0;
  if (!cJSON_IsObject(op)) return err_at(err, errlen, "options: expected an object");
  static const char *const reps[] = {"default", "polygon", "triangle"};
  static const char *const dets[] = {"default", "wrench", "patches", "surface"};
  static const char *const models[] = {"default", "hydroelastic", "point", "hydroelastic_with_fallback"};
  int r = 0, d = 0, m = 0, pc = 0, en = 0;
  if (parse_enum(op, "representation", reps, 3, &r, err, errlen) ||
      parse_enum(op, "detail", dets, 4, &d, err, errlen) ||
      parse_enum(op, "contact_model", models, 4, &m, err, errlen))
    return -1;
  if (get_bool(op, "point_contacts", &pc) < 0)
    return err_at(err, errlen, "options.point_contacts: expected true or false");
  if (get_bool(op, "energy", &en) < 0) return err_at(err, errlen, "options.energy: expected true or false");
  if (get_num(op, "stiction_tolerance", &s->options.stiction_tolerance) < 0)
    return err_at(err, errlen, "options.stiction_tolerance: expected a number");
  double k = 0;
  if (get_num(op, "reduced_contacts", &k) < 0 || !(k >= 0 && k <= 4294967295.0 && k == floor(k)))
    return err_at(err, errlen, "options.reduced_contacts: expected a whole number of points per patch (0 = off)");
  s->options.reduced_contacts = (uint32_t)k;
  s->options.representation = (Contactd__V1__Representation)r;
  s->options.detail = (Contactd__V1__Detail)d;
  s->options.contact_model = (Contactd__V1__ContactModel)m;
  s->options.point_contacts = pc;
  s->options.want_energy = en;
  return 0;
}

/* "frames": cumulative full states (each frame starts from the previous one,
 * the first from the bodies' states). */
static int parse_frames(const cJSON *root, cc_scene *s, char *err, size_t errlen) {
  const cJSON *fs = cJSON_GetObjectItemCaseSensitive(root, "frames");
  if (!fs) return 0;
  if (!cJSON_IsArray(fs)) return err_at(err, errlen, "frames: expected an array of {body: state} objects");
  s->nframes = (size_t)cJSON_GetArraySize(fs);
  s->frames = calloc(s->nframes * s->nbodies + 1, sizeof *s->frames);
  for (size_t f = 0; f < s->nframes; f++) {
    cc_body *cur = &s->frames[f * s->nbodies];
    for (size_t i = 0; i < s->nbodies; i++) cur[i] = f ? s->frames[(f - 1) * s->nbodies + i] : s->bodies[i].state;
    const cJSON *fr = cJSON_GetArrayItem(fs, (int)f);
    if (!cJSON_IsObject(fr)) return err_at(err, errlen, "frames[%zu]: expected an object {body name: state}", f);
    for (const cJSON *e = fr->child; e; e = e->next) {
      int bi = cc_scene_find_body(s, e->string);
      char path[128];
      snprintf(path, sizeof path, "frames[%zu].%s", f, e->string);
      if (bi < 0 || !cJSON_IsObject(e)) return err_at(err, errlen, "%s: no such body (or not an object)", path);
      if (parse_state(e, path, &cur[bi], err, errlen)) return -1;
    }
  }
  return 0;
}

int cc_scene_parse(const char *json, const char *base_dir, cc_scene *s, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->options = (Contactd__V1__QueryOptions)CONTACTD__V1__QUERY_OPTIONS__INIT;
  cJSON *root = cJSON_Parse(json);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    int line = 1;
    for (const char *p = json; at && p < at; p++) line += *p == '\n';
    return err_at(err, errlen, "scene: invalid JSON near line %d", line);
  }
  int rc;
  if (!cJSON_IsObject(root)) rc = err_at(err, errlen, "scene: expected a JSON object");
  else
    rc = parse_geoms(root, base_dir, s, err, errlen) || parse_bodies(root, s, err, errlen) ||
                 parse_pairs(root, s, err, errlen) || parse_options(root, s, err, errlen) ||
                 parse_frames(root, s, err, errlen)
             ? -1
             : 0;
  cJSON_Delete(root);
  if (rc) cc_scene_free(s);
  return rc;
}

int cc_scene_load(const char *path, cc_scene *s, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) return err_at(err, errlen, "cannot open scene file \"%s\"", path);
  char *text = read_all(f, NULL);
  if (f != stdin) fclose(f);
  if (!text) return err_at(err, errlen, "cannot read scene file \"%s\"", path);
  char dir[4096] = ".";
  if (strcmp(path, "-") != 0) {
    const char *slash = strrchr(path, '/');
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (slash == path) snprintf(dir, sizeof dir, "/");
  }
  char inner[900];
  int rc = cc_scene_parse(text, dir, s, inner, sizeof inner);
  free(text);
  if (rc) err_at(err, errlen, "%s: %s", strcmp(path, "-") == 0 ? "<stdin>" : path, inner);
  return rc;
}

void cc_scene_free(cc_scene *s) {
  for (size_t i = 0; s->geoms && i < s->ngeoms; i++) {
    free(s->geoms[i].name);
    free(s->geoms[i].file_data);
    free(s->geoms[i].file_path);
  }
  for (size_t i = 0; s->bodies && i < s->nbodies; i++) free(s->bodies[i].name);
  free(s->geoms);
  free(s->bodies);
  free(s->pairs);
  free(s->exclude);
  free(s->frames);
  memset(s, 0, sizeof *s);
}

int cc_scene_register(cc_client *c, cc_scene *s, cc_error *err) {
  /* ids from an earlier call (another connection, maybe another replica)
   * are checked with one HasGeometry; only what the server lacks is sent */
  const cc_shape **shapes = calloc(s->ngeoms ? s->ngeoms : 1, sizeof *shapes);
  char **ids = calloc(s->ngeoms ? s->ngeoms : 1, sizeof *ids);
  size_t n = 0;
  for (size_t i = 0; shapes && ids && i < s->ngeoms; i++) {
    if (s->geoms[i].preset) continue;
    shapes[n] = &s->geoms[i].shape;
    ids[n++] = s->geoms[i].id;
  }
  int rc = shapes && ids ? cc_ensure_shapes(c, shapes, ids, n, NULL, err) : -1;
  free(shapes);
  free(ids);
  if (rc < 0 && err) snprintf(err->message, sizeof err->message, "out of memory");
  if (rc) return rc < 0 ? CC_ERESOURCE_EXHAUSTED : rc;
  for (size_t i = 0; i < s->nbodies; i++) s->bodies[i].state.geometry_id = s->geoms[s->bodies[i].geom].id;
  if (s->frames)
    for (size_t f = 0; f < s->nframes; f++)
      for (size_t i = 0; i < s->nbodies; i++) s->frames[f * s->nbodies + i].geometry_id = s->bodies[i].state.geometry_id;
  return 0;
}

int cc_scene_find_body(const cc_scene *s, const char *name_or_id) {
  for (size_t i = 0; i < s->nbodies; i++)
    if (strcmp(s->bodies[i].name, name_or_id) == 0) return (int)i;
  char *end;
  unsigned long v = strtoul(name_or_id, &end, 10);
  if (*name_or_id && !*end)
    for (size_t i = 0; i < s->nbodies; i++)
      if (s->bodies[i].state.id == v) return (int)i;
  return -1;
}

const char *cc_scene_body_name(const cc_scene *s, uint32_t id) {
  for (size_t i = 0; i < s->nbodies; i++)
    if (s->bodies[i].state.id == id) return s->bodies[i].name;
  return "?";
}

/* ---- messages ------------------------------------------------------------- */

typedef struct one_body {
  Contactd__V1__Body body;
  Contactd__V1__Pose pose;
  Contactd__V1__Vec3 pos, w, v;
  Contactd__V1__Quat quat;
  Contactd__V1__SpatialVelocity vel;
  Contactd__V1__Material mat;
  Contactd__V1__CollisionFilter filter;
} one_body;

typedef struct msgs_mem {
  one_body *b;
  Contactd__V1__Body **bp;
  Contactd__V1__Pair *pair;
  Contactd__V1__Pair **pp;
  Contactd__V1__Pair *ex;
  Contactd__V1__Pair **exp;
} msgs_mem;

static void vec(Contactd__V1__Vec3 *m, const double v[3]) {
  *m = (Contactd__V1__Vec3)CONTACTD__V1__VEC3__INIT;
  m->x = v[0];
  m->y = v[1];
  m->z = v[2];
}

int cc_scene_msgs_build(const cc_scene *s, const cc_body *states, const uint32_t (*pairs_override)[2],
                        size_t npairs_override, cc_scene_msgs *m) {
  memset(m, 0, sizeof *m);
  msgs_mem *mm = calloc(1, sizeof *mm);
  if (!mm) return -1;
  m->mem = mm;
  size_t n = s->nbodies;
  const uint32_t(*pairs)[2] = npairs_override ? pairs_override : (const uint32_t(*)[2])s->pairs;
  size_t np = npairs_override ? npairs_override : s->npairs;
  int all = npairs_override ? 0 : s->all_pairs;
  mm->b = calloc(n + 1, sizeof *mm->b);
  mm->bp = calloc(n + 1, sizeof *mm->bp);
  mm->pair = calloc(np + 1, sizeof *mm->pair);
  mm->pp = calloc(np + 1, sizeof *mm->pp);
  mm->ex = calloc(s->nexclude + 1, sizeof *mm->ex);
  mm->exp = calloc(s->nexclude + 1, sizeof *mm->exp);
  if (!mm->b || !mm->bp || !mm->pair || !mm->pp || !mm->ex || !mm->exp) {
    cc_scene_msgs_free(m);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    const cc_scene_body *sb = &s->bodies[i];
    const cc_body *st = states ? &states[i] : &sb->state;
    one_body *o = &mm->b[i];
    o->body = (Contactd__V1__Body)CONTACTD__V1__BODY__INIT;
    o->body.body_id = sb->state.id;
    o->body.geometry_id = (char *)s->geoms[sb->geom].id;
    o->body.name = sb->name;
    o->pose = (Contactd__V1__Pose)CONTACTD__V1__POSE__INIT;
    vec(&o->pos, st->p);
    o->pose.position = &o->pos;
    if (st->q[0] != 0 || st->q[1] != 0 || st->q[2] != 0 || st->q[3] != 0) {
      o->quat = (Contactd__V1__Quat)CONTACTD__V1__QUAT__INIT;
      o->quat.w = st->q[0];
      o->quat.x = st->q[1];
      o->quat.y = st->q[2];
      o->quat.z = st->q[3];
      o->pose.orientation = &o->quat;
    }
    o->body.pose = &o->pose;
    o->vel = (Contactd__V1__SpatialVelocity)CONTACTD__V1__SPATIAL_VELOCITY__INIT;
    vec(&o->w, st->w);
    vec(&o->v, st->v);
    o->vel.angular = &o->w;
    o->vel.linear = &o->v;
    o->body.velocity = &o->vel;
    if (sb->has_material) {
      o->mat = (Contactd__V1__Material)CONTACTD__V1__MATERIAL__INIT;
      o->mat.dissipation = sb->dissipation;
      o->mat.friction = sb->friction;
      o->body.material = &o->mat;
    }
    if (sb->has_filter) {
      o->filter = (Contactd__V1__CollisionFilter)CONTACTD__V1__COLLISION_FILTER__INIT;
      o->filter.group = sb->group;
      o->filter.mask = sb->mask;
      o->body.filter = &o->filter;
    }
    mm->bp[i] = &o->body;
  }
  for (size_t i = 0; i < np; i++) {
    mm->pair[i] = (Contactd__V1__Pair)CONTACTD__V1__PAIR__INIT;
    mm->pair[i].a = pairs[i][0];
    mm->pair[i].b = pairs[i][1];
    mm->pp[i] = &mm->pair[i];
  }
  for (size_t i = 0; i < s->nexclude; i++) {
    mm->ex[i] = (Contactd__V1__Pair)CONTACTD__V1__PAIR__INIT;
    mm->ex[i].a = s->exclude[i][0];
    mm->ex[i].b = s->exclude[i][1];
    mm->exp[i] = &mm->ex[i];
  }
  m->all = (Contactd__V1__AllPairs)CONTACTD__V1__ALL_PAIRS__INIT;
  m->all.margin = s->margin;
  m->all.n_exclude = s->nexclude;
  m->all.exclude = mm->exp;
  m->query = (Contactd__V1__ContactQuery)CONTACTD__V1__CONTACT_QUERY__INIT;
  m->query.n_bodies = n;
  m->query.bodies = mm->bp;
  m->query.options = (Contactd__V1__QueryOptions *)&s->options;
  m->open = (Contactd__V1__OpenStream)CONTACTD__V1__OPEN_STREAM__INIT;
  m->open.n_bodies = n;
  m->open.bodies = mm->bp;
  m->open.options = (Contactd__V1__QueryOptions *)&s->options;
  if (all) {
    m->query.all_pairs = &m->all;
    m->open.all_pairs = &m->all;
  } else {
    m->query.n_pairs = m->open.n_pairs = np;
    m->query.pairs = m->open.pairs = mm->pp;
  }
  return 0;
}

void cc_scene_msgs_free(cc_scene_msgs *m) {
  msgs_mem *mm = m->mem;
  if (mm) {
    free(mm->b);
    free(mm->bp);
    free(mm->pair);
    free(mm->pp);
    free(mm->ex);
    free(mm->exp);
    free(mm);
  }
  m->mem = NULL;
}

/* cmj_map.c — the geom name -> hydroelastic properties map of
 * contactd_mujoco (cmj.h), set through the API or read from JSON.
 *
 * JSON is the primary way: MJCF has no place for these properties except
 * <custom> text elements and the geoms' anonymous `user` numbers, and both
 * would tie the properties to one MJCF file, whereas a side file keyed by
 * geom name applies unchanged to a model from any source (an MJCF, an
 * included file, a model built in code) and names every property. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cmj.h"

typedef struct entry {
  char *name;
  cmj_props p;
} entry;

struct cmj_map {
  entry *e;
  size_t n, cap;
};

cmj_map *cmj_map_new(void) { return calloc(1, sizeof(cmj_map)); }

void cmj_map_free(cmj_map *mp) {
  if (!mp) return;
  for (size_t i = 0; i < mp->n; i++) free(mp->e[i].name);
  free(mp->e);
  free(mp);
}

static int why_set(char *why, size_t n, const char *fmt, const char *a, const char *b) {
  if (why && n) snprintf(why, n, fmt, a, b);
  return -1;
}

static int check_props(const char *name, const cmj_props *p, char *why, size_t n) {
  if (!(p->dissipation >= 0) || !isfinite(p->dissipation))
    return why_set(why, n, "geom '%s': dissipation must be finite and >= 0%s", name, "");
  if (!(p->friction >= 0) || !isfinite(p->friction))
    return why_set(why, n, "geom '%s': friction must be finite and >= 0%s", name, "");
  if (!p->rigid && (!(p->modulus > 0) || !isfinite(p->modulus)))
    return why_set(why, n, "geom '%s': a compliant geom needs a modulus > 0 (Pa)%s", name, "");
  if (!(p->hint >= 0) || !isfinite(p->hint) || !(p->slab >= 0) || !isfinite(p->slab))
    return why_set(why, n, "geom '%s': hint and slab must be finite and >= 0%s", name, "");
  return 0;
}

int cmj_map_set(cmj_map *mp, const char *name, const cmj_props *p, char *why, size_t n) {
  if (!mp || !name || !*name || !p) return why_set(why, n, "cmj_map_set: %s%s", "map, name and properties are required", "");
  if (check_props(name, p, why, n)) return -1;
  for (size_t i = 0; i < mp->n; i++)
    if (!strcmp(mp->e[i].name, name)) {
      mp->e[i].p = *p;
      return 0;
    }
  if (mp->n == mp->cap) {
    size_t cap = mp->cap ? 2 * mp->cap : 8;
    entry *e = realloc(mp->e, cap * sizeof *e);
    if (!e) return why_set(why, n, "out of memory%s%s", "", "");
    mp->e = e;
    mp->cap = cap;
  }
  char *s = strdup(name);
  if (!s) return why_set(why, n, "out of memory%s%s", "", "");
  mp->e[mp->n].name = s;
  mp->e[mp->n].p = *p;
  mp->n++;
  return 0;
}

const cmj_props *cmj_map_get(const cmj_map *mp, const char *name) {
  if (!mp || !name) return NULL;
  for (size_t i = 0; i < mp->n; i++)
    if (!strcmp(mp->e[i].name, name)) return &mp->e[i].p;
  return NULL;
}

size_t cmj_map_count(const cmj_map *mp) { return mp ? mp->n : 0; }

const char *cmj_map_name(const cmj_map *mp, size_t i) { return mp && i < mp->n ? mp->e[i].name : NULL; }

/* One geom's object: {"compliance": ..., "modulus": ..., ...}. */
static int parse_geom(const cJSON *g, cmj_props *p, char *why, size_t n) {
  memset(p, 0, sizeof *p);
  int have_compliance = 0;
  for (const cJSON *k = g->child; k; k = k->next) {
    if (!strcmp(k->string, "compliance")) {
      if (!cJSON_IsString(k) || (strcmp(k->valuestring, "rigid") && strcmp(k->valuestring, "compliant")))
        return why_set(why, n, "geoms.%s.compliance: must be \"rigid\" or \"compliant\"%s", g->string, "");
      p->rigid = !strcmp(k->valuestring, "rigid");
      have_compliance = 1;
      continue;
    }
    double *dst = !strcmp(k->string, "modulus")       ? &p->modulus
                  : !strcmp(k->string, "dissipation") ? &p->dissipation
                  : !strcmp(k->string, "friction")    ? &p->friction
                  : !strcmp(k->string, "hint")        ? &p->hint
                  : !strcmp(k->string, "slab")        ? &p->slab
                                                      : NULL;
    if (!dst)
      return why_set(why, n, "geoms.%s.%s: unknown key (compliance, modulus, dissipation, friction, hint, slab)",
                     g->string, k->string);
    if (!cJSON_IsNumber(k)) return why_set(why, n, "geoms.%s.%s: must be a number", g->string, k->string);
    *dst = k->valuedouble;
  }
  if (!have_compliance) return why_set(why, n, "geoms.%s.compliance: required (\"rigid\" or \"compliant\")%s", g->string, "");
  return 0;
}

int cmj_map_parse(cmj_map *mp, const char *json, char *why, size_t n) {
  cJSON *root = cJSON_Parse(json);
  if (!root) return why_set(why, n, "contact map: not valid JSON near '%.40s'%s", cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "", "");
  int rc = 0;
  const cJSON *geoms = cJSON_GetObjectItemCaseSensitive(root, "geoms");
  if (!cJSON_IsObject(root) || !cJSON_IsObject(geoms)) {
    rc = why_set(why, n, "contact map: expected {\"geoms\": {\"NAME\": {...}, ...}}%s%s", "", "");
  } else {
    for (const cJSON *k = root->child; k && !rc; k = k->next)
      if (strcmp(k->string, "geoms")) rc = why_set(why, n, "contact map: unknown key '%s' (only \"geoms\")%s", k->string, "");
    for (const cJSON *g = geoms->child; g && !rc; g = g->next) {
      cmj_props p;
      if (!cJSON_IsObject(g)) rc = why_set(why, n, "geoms.%s: must be an object%s", g->string, "");
      else if (!(rc = parse_geom(g, &p, why, n))) rc = cmj_map_set(mp, g->string, &p, why, n);
    }
  }
  cJSON_Delete(root);
  return rc;
}

int cmj_map_load(cmj_map *mp, const char *path, char *why, size_t n) {
  FILE *f = fopen(path, "rb");
  if (!f) return why_set(why, n, "contact map %s: %s", path, strerror(errno));
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      cap = cap ? 2 * cap : 8192;
      char *b = realloc(buf, cap);
      if (!b) {
        free(buf);
        fclose(f);
        return why_set(why, n, "contact map %s: %s", path, "out of memory");
      }
      buf = b;
    }
    size_t got = fread(buf + len, 1, 4096, f);
    len += got;
    if (got < 4096) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return why_set(why, n, "contact map %s: %s", path, "read error");
  }
  buf[len] = 0;
  int rc = cmj_map_parse(mp, buf, why, n);
  free(buf);
  return rc;
}

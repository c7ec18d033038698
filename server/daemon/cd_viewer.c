/* cd_viewer.c — the viewer's routes and event streams (see cd_viewer.h).
 * Two-way with cd_http.c: that file is the HTTP
 * server, which routes requests here (cd_viewer_route); the answers go back
 * through its response functions (cd_http.h). */
#include "cd_viewer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cd_log.h"
#include "cd_pool.h"
#include "cd_publish.h"
#include "cd_server.h"
#include "cd_webauth.h"

#ifndef CD_VIEWER_BUILD_DIR
#define CD_VIEWER_BUILD_DIR ""
#endif
#ifndef CD_VIEWER_INSTALL_DIR
#define CD_VIEWER_INSTALL_DIR ""
#endif

/* The files the page is made of: nothing else is served from the assets
 * directory (so no path from a request ever reaches the file system). */
static const struct asset {
  const char *url, *file, *ctype;
} ASSETS[] = {
    {"/", "index.html", "text/html; charset=utf-8"},
    {"/index.html", "index.html", "text/html; charset=utf-8"},
    {"/viewer.js", "viewer.js", "text/javascript; charset=utf-8"},
    {"/viewer.css", "viewer.css", "text/css; charset=utf-8"},
    {"/vendor/three.module.js", "vendor/three.module.js", "text/javascript; charset=utf-8"},
    {"/vendor/OrbitControls.js", "vendor/OrbitControls.js", "text/javascript; charset=utf-8"},
};
#define ASSET_MAX_BYTES (16u << 20)

typedef struct viewer viewer;
struct viewer {
  cd_viewers *v;
  cd_http_conn *c;
  char scene[CD_PUB_NAME_MAX + 1];
  int has_who;       /* principals set: it sees what who may see */
  cd_principal who;
  uint64_t sent_version;
  uint64_t last_send_ns;
  cd_pub_snap *ready; /* encoded for it since its last update, not yet sent (a reference), or NULL */
  viewer *prev, *next;
};

struct cd_viewers {
  cd_server *srv;
  uv_async_t published; /* a scene was published (sent from any thread) */
  uv_timer_t tick;      /* while viewers wait for their rate: every interval */
  int waiting;          /* a viewer has a newer version its rate holds back */
  int handles_open;
  int stopped;          /* cd_viewer_stop: freed once its handles and encoding are done */
  cd_pub_snap *encoding; /* being encoded on the codec thread (a reference), or NULL */
  viewer *list;
  uint64_t n;
  uint64_t interval_ns;
  char dir[512];        /* assets; "" = none (as long as cd_config.viewer_dir) */
};

/* ---- what a request may see ------------------------------------------------ */

static int sees_tenant(const char *tenant, const void *arg) { return cd_webauth_sees(arg, tenant); }

/* The filter for cd_publish: none without principals. */
#define SEES(p) ((p) ? sees_tenant : NULL), (const void *)(p)

/* ---- JSON into a growing buffer ------------------------------------------ */

typedef struct jbuf {
  char *b;
  size_t n, cap, max; /* max: 0 = none; past it the buffer stops growing (over = 1) */
  int failed, over;
} jbuf;

static int jgrow(jbuf *j, size_t need) {
  if (j->failed) return -1;
  if (j->n + need + 1 <= j->cap) return 0;
  size_t cap = j->cap ? j->cap : 4096;
  while (cap < j->n + need + 1) cap *= 2;
  if (j->max && cap > j->max + 64) {
    cap = j->max + 64;
    if (j->n + need + 1 > cap) {
      j->failed = j->over = 1;
      return -1;
    }
  }
  char *nb = realloc(j->b, cap);
  if (!nb) {
    j->failed = 1;
    return -1;
  }
  j->b = nb;
  j->cap = cap;
  return 0;
}

__attribute__((format(printf, 2, 3))) static void jput(jbuf *j, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= sizeof tmp || jgrow(j, (size_t)k)) {
    j->failed = 1;
    return;
  }
  memcpy(j->b + j->n, tmp, (size_t)k + 1);
  j->n += (size_t)k;
}

/* A number, or null when it is not finite (JSON has no such values). */
static void jnum(jbuf *j, const char *sep, double x, int digits) {
  if (isfinite(x)) jput(j, "%s%.*g", sep, digits, x);
  else jput(j, "%snull", sep);
}

static void jvec(jbuf *j, const char *key, const double *x, int n, int digits) {
  jput(j, "\"%s\":[", key);
  for (int i = 0; i < n; i++) jnum(j, i ? "," : "", x[i], digits);
  jput(j, "]");
}

/* ---- a snapshot as JSON ---------------------------------------------------- */

static const char *status_name(int s) {
  switch (s) {
    case CE_CONTACT_SURFACE: return "surface";
    case CE_CONTACT_POINT: return "point";
    case CE_CONTACT_UNSUPPORTED: return "unsupported";
    case CE_CONTACT_SPECULATIVE: return "speculative";
    default: return "none";
  }
}

static void encode_surface(jbuf *j, const cd_pub_pair *p) {
  jput(j, ",\"surface\":{\"v\":[");
  for (int32_t i = 0; i < 3 * p->nv; i++) jnum(j, i ? "," : "", p->v[i], 7);
  jput(j, "],\"p\":[");
  for (int32_t i = 0; i < p->nv; i++) jnum(j, i ? "," : "", p->p[i], 7);
  jput(j, "],\"tri\":[");
  for (int32_t i = 0; i < 3 * p->ntri; i++) jput(j, "%s%d", i ? "," : "", p->tri[i]);
  jput(j, "],\"patch\":[");
  for (int32_t i = 0; i < p->ntri; i++) jput(j, "%s%d", i ? "," : "", p->tri_patch[i]);
  jput(j, "]}");
}

/* "reduced" (only when the publishing query asked for reduced contacts;
 * forces to 17 digits, so that they add up to "force" as the reply's do)
 * and "speculative" (only for a speculative pair). */
static void encode_extras(jbuf *j, const cd_pub_pair *p) {
  if (p->nreduced > 0) {
    jput(j, ",\"reduced\":[");
    for (int32_t i = 0; i < p->nreduced; i++) {
      const cd_pub_reduced *q = &p->reduced[i];
      jput(j, "%s{\"patch\":%d,", i ? "," : "", q->patch);
      jvec(j, "x", q->x, 3, 17);
      jput(j, ",");
      jvec(j, "n", q->n, 3, 9);
      jput(j, ",");
      jvec(j, "force", q->force, 3, 17);
      jput(j, ",");
      jvec(j, "couple", q->couple, 3, 17);
      jnum(j, ",\"stiffness\":", q->stiffness, 9);
      jnum(j, ",\"separation\":", q->separation, 9);
      jput(j, "}");
    }
    jput(j, "]");
  }
  if (p->has_speculative) {
    const ce_speculative *sp = &p->speculative;
    double n[3] = {sp->normal.x, sp->normal.y, sp->normal.z}, x[3] = {sp->point.x, sp->point.y, sp->point.z};
    jnum(j, ",\"speculative\":{\"separation\":", sp->separation, 17);
    jput(j, ",");
    jvec(j, "normal", n, 3, 9);
    jput(j, ",");
    jvec(j, "point", x, 3, 9);
    jnum(j, ",\"stiffness\":", sp->stiffness, 9);
    jput(j, ",\"faces\":%d}", sp->faces);
  }
}

static void encode_pair(jbuf *j, const cd_pub_pair *p) {
  jput(j, "{\"a\":%u,\"b\":%u,\"status\":\"%s\",", p->a, p->b, status_name(p->status));
  jvec(j, "force", p->force, 3, 17);
  jput(j, ",");
  jvec(j, "point", p->point, 3, 17);
  jnum(j, ",\"area\":", p->area, 17);
  jput(j, ",\"faces\":%d", p->faces);
  if (p->has_energy) jnum(j, ",\"strainEnergy\":", p->energy, 17);
  if (p->ntri > 0) encode_surface(j, p);
  jput(j, ",\"patches\":[");
  for (int32_t i = 0; i < p->npatches; i++) {
    const cd_pub_patch *q = &p->patches[i];
    jput(j, "%s{", i ? "," : "");
    jvec(j, "point", q->point, 3, 9);
    jput(j, ",");
    jvec(j, "force", q->force, 3, 9);
    jnum(j, ",\"area\":", q->area, 9);
    jput(j, ",\"faces\":%d}", q->faces);
  }
  jput(j, "],\"points\":[");
  for (int32_t i = 0; i < p->npoints; i++) {
    const cd_pub_point *q = &p->points[i];
    jput(j, "%s{", i ? "," : "");
    jvec(j, "x", q->x, 3, 7);
    jput(j, ",");
    jvec(j, "n", q->n, 3, 7);
    jnum(j, ",\"p\":", q->pressure, 7);
    jnum(j, ",\"area\":", q->area, 7);
    jput(j, "}");
  }
  jput(j, "]");
  encode_extras(j, p);
  jput(j, "}");
}

/* The snapshot's JSON (one line) into *out (malloc'd); 0, or -1 when out
 * of memory. Reads only the snapshot (immutable): any thread. */
static int snap_encode(const cd_pub_snap *s, char **out, size_t *out_len) {
  jbuf j = {0};
  jput(&j, "{\"scene\":\"%s\",\"version\":%llu,\"time\":%.6f,\"bodies\":[", s->scene,
       (unsigned long long)s->version, s->wall_s);
  for (int32_t i = 0; i < s->nbodies; i++) {
    const cd_pub_body *b = &s->bodies[i];
    jput(&j, "%s{\"id\":%u,\"geometry\":\"%s\",", i ? "," : "", b->id, b->geometry);
    jvec(&j, "R", b->R, 9, 9);
    jput(&j, ",");
    jvec(&j, "p", b->p, 3, 9);
    jput(&j, "}");
  }
  jput(&j, "],\"pairs\":[");
  for (int64_t i = 0, k = 0; i < s->npairs; i++) {
    if (!s->pairs[i]) continue;
    if (k++) jput(&j, ",");
    encode_pair(&j, s->pairs[i]);
  }
  jput(&j, "]}");
  if (j.failed) {
    free(j.b);
    return -1;
  }
  *out = j.b;
  *out_len = j.n;
  return 0;
}

/* ---- event streams --------------------------------------------------------- */

/* A snapshot's update is encoded once, on the server's codec thread, and
 * shared by every viewer of its scene: the HTTP loop (loop 0, which also
 * serves query connections) only copies the encoded bytes into each
 * viewer's write. One snapshot is encoded at a time; s->json is written
 * only by that job (or, with no codec thread, on this loop), so the loop
 * reads it only when s is not v->encoding. */

static void pump(viewer *w);

static void pump_all(cd_viewers *v) {
  for (viewer *w = v->list, *next; w; w = next) {
    next = w->next; /* pump may close w */
    pump(w);
  }
}

static void on_published(uv_async_t *a) { pump_all(a->data); }

static void on_tick(uv_timer_t *t) {
  cd_viewers *v = t->data;
  v->waiting = 0;
  pump_all(v);
  if (!v->waiting) uv_timer_stop(t); /* nothing held back: the next publication restarts it */
}

typedef struct enc_job {
  cd_job job;
  cd_viewers *v;
  cd_pub_snap *s;
  int rc;
} enc_job;

static void enc_run(cd_job *job, cd_worker *wk) {
  (void)wk;
  enc_job *e = (enc_job *)job;
  e->rc = snap_encode(e->s, &e->s->json, &e->s->json_len);
}

static void viewers_free_if_done(cd_viewers *v) {
  if (v->stopped && v->handles_open == 0 && !v->encoding) free(v);
}

/* The encoded snapshot goes to the viewers of its scene that are not
 * writing (the others ask for the latest when their write completes). */
static void enc_done(cd_job *job) {
  enc_job *e = (enc_job *)job;
  cd_viewers *v = e->v;
  cd_pub_snap *s = e->s;
  int rc = e->rc;
  free(e);
  v->encoding = NULL;
  if (!v->stopped) {
    if (rc) CD_WARN("viewer update dropped: out of memory encoding it", "scene=%s", s->scene);
    for (viewer *w = v->list; w && !rc; w = w->next) {
      if (strcmp(w->scene, s->scene) != 0 || cd_http_busy(w->c) || s->version == w->sent_version ||
          (w->has_who && !cd_webauth_sees(&w->who, s->tenant)))
        continue;
      cd_publish_snap_unref(w->ready);
      cd_publish_snap_ref(s);
      w->ready = s;
    }
  }
  cd_publish_snap_unref(s);
  if (v->stopped) viewers_free_if_done(v);
  else pump_all(v);
}

/* Have s encoded: on the codec thread (1: it is, or another snapshot is,
 * being encoded: enc_done pumps again), or here when there is none (0:
 * s->json is set, or encoding failed and s->json is NULL). */
static int request_encode(cd_viewers *v, cd_pub_snap *s) {
  if (v->encoding) return 1;
  cd_pool *codec = v->srv->codec;
  enc_job *e = codec ? calloc(1, sizeof *e) : NULL;
  if (!e) {
    if (snap_encode(s, &s->json, &s->json_len)) CD_WARN("viewer update dropped: out of memory", "scene=%s", s->scene);
    return 0;
  }
  e->job.run = enc_run;
  e->job.done = enc_done;
  e->v = v;
  cd_publish_snap_ref(s);
  e->s = s;
  v->encoding = s;
  cd_pool_submit(codec, NULL, &e->job);
  return 1;
}

/* What w is sent next: the update encoded for it, or the scene's latest if
 * that is encoded; NULL (an encoding started) if neither. Takes over s. */
static cd_pub_snap *next_update(viewer *w, cd_pub_snap *s) {
  cd_viewers *v = w->v;
  if (w->ready) {
    cd_pub_snap *r = w->ready;
    w->ready = NULL;
    if (r->version != w->sent_version) {
      cd_publish_snap_unref(s);
      return r;
    }
    cd_publish_snap_unref(r);
  }
  if (s != v->encoding && (s->json || request_encode(v, s) == 0) && s->json) return s;
  cd_publish_snap_unref(s);
  return NULL;
}

/* Send w the scene's latest version if it is newer than what it has, it
 * is not still writing the previous one, and its rate allows. */
static void pump(viewer *w) {
  cd_viewers *v = w->v;
  if (cd_http_busy(w->c)) return;
  cd_pub_snap *s = cd_publish_get(v->srv->publish, w->scene, SEES(w->has_who ? &w->who : NULL));
  if (!s || s->version == w->sent_version) {
    cd_publish_snap_unref(s);
    return;
  }
  uint64_t now = cd_stats_now_ns();
  if (w->last_send_ns && now - w->last_send_ns < v->interval_ns) {
    cd_publish_snap_unref(s);
    v->waiting = 1;
    if (!uv_is_active((uv_handle_t *)&v->tick)) {
      uint64_t ms = v->interval_ns / 1000000;
      uv_timer_start(&v->tick, on_tick, ms ? ms : 1, ms ? ms : 1);
    }
    return;
  }
  if (!(s = next_update(w, s))) return;
  static const char pre[] = "event: scene\ndata: ";
  char *buf = malloc(sizeof pre + s->json_len + 2);
  size_t len = 0;
  if (buf) {
    memcpy(buf, pre, sizeof pre - 1);
    memcpy(buf + sizeof pre - 1, s->json, s->json_len);
    len = sizeof pre - 1 + s->json_len;
    buf[len++] = '\n';
    buf[len++] = '\n';
  }
  uint64_t version = s->version;
  cd_publish_snap_unref(s);
  if (!buf) {
    CD_WARN("viewer update dropped: out of memory", "scene=%s", w->scene);
    return;
  }
  w->sent_version = version;
  w->last_send_ns = now;
  cd_http_send(w->c, buf, len);
}

static void viewer_sent(void *arg) { pump(arg); }

static void viewer_closed(void *arg) {
  viewer *w = arg;
  cd_viewers *v = w->v;
  if (w->prev) w->prev->next = w->next;
  else v->list = w->next;
  if (w->next) w->next->prev = w->prev;
  v->n--;
  if (!v->list) uv_timer_stop(&v->tick);
  cd_publish_snap_unref(w->ready);
  free(w);
}

static void start_events(cd_viewers *v, cd_http_conn *c, const char *scene, const cd_principal *who) {
  const cd_limits *l = &v->srv->cfg.limits;
  if (v->n >= l->max_viewers) {
    char msg[128];
    int n = snprintf(msg, sizeof msg, "too many viewers: %llu open (max_viewers)\n", (unsigned long long)v->n);
    cd_http_respond(c, 503, "text/plain", NULL, msg, (size_t)n);
    return;
  }
  viewer *w = calloc(1, sizeof *w);
  if (!w) {
    CD_HTTP_RESPOND_TEXT(c, 503, NULL, "out of memory\n");
    return;
  }
  w->v = v;
  w->c = c;
  if (who) {
    w->has_who = 1;
    w->who = *who;
  }
  snprintf(w->scene, sizeof w->scene, "%.*s", CD_PUB_NAME_MAX, scene);
  w->next = v->list;
  if (v->list) v->list->prev = w;
  v->list = w;
  v->n++;
  if (cd_http_stream_start(c, viewer_sent, viewer_closed, w) == 0) pump(w);
}

/* ---- geometry -------------------------------------------------------------- */

static void geometry_json(cd_viewers *v, cd_http_conn *c, const cd_cache_entry *e);

static void geometry_surface(cd_viewers *v, cd_http_conn *c, const char *id, const cd_principal *who) {
  /* with principals set, a geometry is shown only as a body of a scene the
   * request may see (and to every tenant's viewer, any geometry) */
  if (who && !cd_webauth_sees(who, CD_TENANT_ALL) && !cd_publish_shows_geometry(v->srv->publish, id, SEES(who))) {
    CD_HTTP_RESPOND_TEXT(c, 404, NULL, "no such geometry\n");
    return;
  }
  /* pinned while it is read: another loop may evict what nobody uses */
  cd_cache_lock(v->srv->cache);
  cd_cache_entry *e = cd_cache_find(v->srv->cache, id);
  int ready = e && e->state == CD_ENTRY_READY;
  if (ready) cd_cache_pin(e);
  cd_cache_unlock(v->srv->cache);
  if (!ready) {
    CD_HTTP_RESPOND_TEXT(c, 404, NULL, "no such geometry\n");
    return;
  }
  geometry_json(v, c, e);
  cd_cache_unpin(e);
}

/* The boundary mesh of a READY entry as JSON (or why not). */
static void geometry_json(cd_viewers *v, cd_http_conn *c, const cd_cache_entry *e) {
  jbuf j = {.max = (size_t)v->srv->cfg.limits.viewer_max_geometry_bytes};
  if (e->info.is_halfspace) {
    jput(&j, "{\"id\":\"%s\",\"kind\":\"halfspace\"}", e->id);
  } else {
    ce_boundary b;
    ce_error err;
    ce_errno rc = ce_geometry_boundary(e->geometry, &b, &err);
    if (rc != CE_OK) {
      char msg[300];
      int n = snprintf(msg, sizeof msg, "no boundary mesh: %s\n", err.message);
      cd_http_respond(c, rc == CE_ENOMEM ? 503 : 404, "text/plain", NULL, msg, (size_t)n);
      return;
    }
    jput(&j, "{\"id\":\"%s\",\"kind\":\"%s\",\"v\":[", e->id,
         e->info.shape == CE_SHAPE_HEIGHTFIELD ? "terrain" : "mesh");
    for (int32_t i = 0; i < 3 * b.nv && !j.failed; i++) jnum(&j, i ? "," : "", b.v[i], 7);
    jput(&j, "],\"tri\":[");
    for (int32_t i = 0; i < 3 * b.nt && !j.failed; i++) jput(&j, "%s%d", i ? "," : "", b.tri[i]);
    jput(&j, "]}");
    ce_boundary_free(&b);
  }
  if (j.failed) {
    char msg[200];
    int n = j.over ? snprintf(msg, sizeof msg, "the boundary mesh is larger than viewer_max_geometry_bytes (%llu)\n",
                              (unsigned long long)v->srv->cfg.limits.viewer_max_geometry_bytes)
                   : snprintf(msg, sizeof msg, "out of memory\n");
    free(j.b);
    cd_http_respond(c, j.over ? 413 : 503, "text/plain", NULL, msg, (size_t)n);
    return;
  }
  cd_http_respond_owned(c, 200, "application/json", j.b, j.n);
}

/* ---- assets ---------------------------------------------------------------- */

static int is_file(const char *dir, const char *name) {
  char p[1024];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The directory holding a complete set of assets (the page and three.js). */
static int assets_complete(const char *dir) {
  return dir[0] && is_file(dir, "index.html") && is_file(dir, "viewer.js") &&
         is_file(dir, "vendor/three.module.js") && is_file(dir, "vendor/OrbitControls.js");
}

static void pick_assets(cd_viewers *v) {
  const char *cands[] = {v->srv->cfg.viewer_dir, CD_VIEWER_BUILD_DIR, CD_VIEWER_INSTALL_DIR};
  /* a directory given explicitly is the only one looked at */
  int n = v->srv->cfg.viewer_dir[0] ? 1 : 3;
  for (int i = 0; i < n; i++)
    if (assets_complete(cands[i])) {
      snprintf(v->dir, sizeof v->dir, "%s", cands[i]);
      return;
    }
  v->dir[0] = 0;
}

static const char NO_ASSETS[] =
    "<!doctype html><meta charset=utf-8><title>contactd viewer</title>\n"
    "<h1>contactd: the viewer is not installed</h1>\n"
    "<p>This contactd was built without the viewer's assets (the page and three.js), or cannot find them. "
    "Everything else on this port works as usual: <a href=\"/metrics\">/metrics</a>, /healthz, /readyz and "
    "the <a href=\"/v1/scenes\">/v1/scenes</a> API.</p>\n"
    "<p>To get the viewer, build with npm available (CMake runs <code>npm ci</code> in viewer/ and copies "
    "the assets into the build), or point <code>--viewer-dir</code> at a directory holding them. See "
    "docs/viewer.md.</p>\n";

static void serve_asset(cd_viewers *v, cd_http_conn *c, const struct asset *a) {
  if (!v->dir[0]) {
    if (strcmp(a->file, "index.html") == 0)
      cd_http_respond(c, 200, "text/html; charset=utf-8", NULL, NO_ASSETS, sizeof NO_ASSETS - 1);
    else
      CD_HTTP_RESPOND_TEXT(c, 404, NULL, "viewer assets not installed\n");
    return;
  }
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", v->dir, a->file);
  FILE *f = fopen(p, "rb");
  char *buf = NULL;
  size_t n = 0;
  if (f) {
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && st.st_size >= 0 && (uint64_t)st.st_size <= ASSET_MAX_BYTES &&
        (buf = malloc((size_t)st.st_size + 1)))
      n = fread(buf, 1, (size_t)st.st_size, f);
    fclose(f);
  }
  if (!buf) {
    CD_HTTP_RESPOND_TEXT(c, 404, NULL, "not found\n");
    return;
  }
  cd_http_respond(c, 200, a->ctype, NULL, buf, n);
  free(buf);
}

/* ---- routing --------------------------------------------------------------- */

static int is_hex_id(const char *s, size_t n) {
  if (n != CD_HASH_HEX_LEN) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

static void bad(cd_http_conn *c, const char *msg) { cd_http_respond(c, 400, "text/plain", NULL, msg, strlen(msg)); }

/* GET /v1/scenes[/NAME[/events]] and /v1/geometry/ID/surface; 0 if none. */
static int route_api(cd_viewers *v, cd_http_conn *c, const char *path, const cd_principal *who) {
  if (strcmp(path, "/v1/scenes") == 0) {
    size_t n;
    char *b = cd_publish_list_json(v->srv->publish, &n, SEES(who));
    if (b) cd_http_respond_owned(c, 200, "application/json", b, n);
    else CD_HTTP_RESPOND_TEXT(c, 503, NULL, "out of memory\n");
    return 1;
  }
  if (strncmp(path, "/v1/scenes/", 11) == 0) {
    const char *name = path + 11, *slash = strchr(name, '/');
    if (slash && strcmp(slash, "/events") != 0) return 0;
    char nm[CD_PUB_NAME_MAX + 2];
    size_t len = slash ? (size_t)(slash - name) : strlen(name);
    snprintf(nm, sizeof nm, "%.*s", (int)(len < sizeof nm - 1 ? len : sizeof nm - 1), name);
    if (len > CD_PUB_NAME_MAX || !cd_publish_name_ok(nm)) {
      bad(c, "bad scene name: 1 to 64 characters of A-Z, a-z, 0-9, '_', '-', '.'\n");
      return 1;
    }
    if (slash) {
      start_events(v, c, nm, who);
      return 1;
    }
    cd_pub_snap *s = cd_publish_get(v->srv->publish, nm, SEES(who));
    char *b = NULL;
    size_t n = 0;
    if (!s) CD_HTTP_RESPOND_TEXT(c, 404, NULL, "no such scene\n");
    else if (s != v->encoding && s->json) cd_http_respond(c, 200, "application/json", NULL, s->json, s->json_len);
    else if (snap_encode(s, &b, &n)) CD_HTTP_RESPOND_TEXT(c, 503, NULL, "out of memory\n");
    else cd_http_respond_owned(c, 200, "application/json", b, n); /* a one-off request: not kept */
    cd_publish_snap_unref(s);
    return 1;
  }
  if (strncmp(path, "/v1/geometry/", 13) == 0) {
    const char *id = path + 13, *slash = strchr(id, '/');
    if (!slash || strcmp(slash, "/surface") != 0) return 0;
    if (!is_hex_id(id, (size_t)(slash - id))) {
      bad(c, "bad geometry id: 64 lowercase hex digits\n");
      return 1;
    }
    char hex[CD_HASH_HEX_LEN + 1];
    snprintf(hex, sizeof hex, "%.*s", CD_HASH_HEX_LEN, id);
    geometry_surface(v, c, hex, who);
    return 1;
  }
  return 0;
}

int cd_viewer_route(cd_viewers *v, cd_http_conn *c, const cd_http_req *req) {
  const struct asset *a = NULL;
  for (size_t i = 0; i < sizeof ASSETS / sizeof *ASSETS; i++)
    if (strcmp(req->path, ASSETS[i].url) == 0) a = &ASSETS[i];
  if (strcmp(req->method, "GET") != 0) { /* the page's paths and the API take GET only */
    if (!a && strncmp(req->path, "/v1/", 4) != 0) return 0;
    CD_HTTP_RESPOND_TEXT(c, 405, "Allow: GET\r\n", "method not allowed\n");
    return 1;
  }
  if (a) {
    serve_asset(v, c, a);
    return 1;
  }
  return route_api(v, c, req->path, req->principal);
}

/* ---- lifetime -------------------------------------------------------------- */

static void notify(void *arg) { uv_async_send(&((cd_viewers *)arg)->published); }

cd_viewers *cd_viewer_start(cd_server *s) {
  cd_viewers *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->srv = s;
  v->interval_ns = 1000000000ull / (s->cfg.limits.viewer_max_rate_hz ? s->cfg.limits.viewer_max_rate_hz : 1);
  uv_async_init(s->loop, &v->published, on_published);
  v->published.data = v;
  uv_timer_init(s->loop, &v->tick);
  v->tick.data = v;
  v->handles_open = 2;
  pick_assets(v);
  if (!v->dir[0])
    CD_WARN("viewer assets not found: the page at / says so; everything else on the HTTP port works",
            "viewer_dir=\"%s\"", s->cfg.viewer_dir[0] ? s->cfg.viewer_dir : CD_VIEWER_BUILD_DIR);
  cd_publish_set_notify(s->publish, notify, v);
  return v;
}

const char *cd_viewer_assets_dir(const cd_viewers *v) { return v->dir[0] ? v->dir : "(none)"; }

static void on_handle_closed(uv_handle_t *h) {
  cd_viewers *v = h->data;
  v->handles_open--;
  viewers_free_if_done(v);
}

void cd_viewer_stop(cd_viewers *v) {
  if (!v) return;
  v->stopped = 1; /* an encoding still running frees it in its done() */
  cd_publish_set_notify(v->srv->publish, NULL, NULL);
  uv_close((uv_handle_t *)&v->published, on_handle_closed);
  uv_close((uv_handle_t *)&v->tick, on_handle_closed);
}

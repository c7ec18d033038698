/* cd_publish.h — the latest result of each published scene, for viewers.
 *
 * A query or stream opts in with QueryOptions.publish (a scene name). Its
 * jobs copy what a viewer draws out of each pair's engine result on the
 * worker (cd_publish_pair_new: the surface with its pressure, the patches and
 * the per-face point contacts, the net force and its equivalent contact
 * point); when the query is finished the pairs and the bodies' poses become
 * the scene's snapshot, replacing the previous one (no history is kept).
 *
 * Thread safety: the table is guarded by a mutex held only to swap or take
 * a snapshot pointer (never while copying or encoding), so publishing from
 * any loop and reading from the HTTP loop never wait on each other for
 * long. Snapshots are immutable once published and reference-counted: a
 * reader keeps one alive while it encodes it. After each publication the
 * notify hook runs on the publishing thread (the viewer's uv_async_send). */
#ifndef CD_PUBLISH_H
#define CD_PUBLISH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ce.h"

/* Scene names: 1 to CD_PUB_NAME_MAX characters of [A-Za-z0-9_.-] (they
 * appear in URL paths unescaped). */
#define CD_PUB_NAME_MAX 64
int cd_publish_name_ok(const char *name);

typedef struct cd_pub_patch {
  double point[3], force[3], area;
  int32_t faces;
} cd_pub_patch;

typedef struct cd_pub_point {
  double x[3], n[3], pressure, area;
} cd_pub_point;

/* A reduced contact (ce_reduced_contact), when the publishing query asked
 * for them (options.reducedContacts). */
typedef struct cd_pub_reduced {
  int32_t patch;
  double x[3], n[3], force[3], couple[3], stiffness, separation;
} cd_pub_reduced;

/* One pair as a viewer sees it (world frame). */
typedef struct cd_pub_pair {
  uint32_t a, b;
  int status;             /* ce_contact_status */
  double force[3];        /* net force on A, N */
  double point[3];        /* equivalent contact point of the whole surface */
  double area;
  int32_t faces;          /* faces of the whole surface */
  int has_energy;
  double energy;          /* PairResult.strain_energy when the protocol has it */
  int32_t nv, ntri;       /* surface as triangles (polygons fanned) */
  float *v, *p;           /* 3 nv positions, nv pressures (Pa) */
  int32_t *tri, *tri_patch; /* 3 ntri vertex indices, the patch of each (-1: none) */
  int32_t npatches;
  cd_pub_patch *patches;
  int32_t npoints;
  cd_pub_point *points;
  int32_t nreduced;
  cd_pub_reduced *reduced;
  int has_speculative;    /* status CE_CONTACT_SPECULATIVE: speculative is set */
  ce_speculative speculative;
} cd_pub_pair;

typedef struct cd_pub_body {
  uint32_t id;
  char geometry[65];
  double R[9], p[3];      /* pose, row-major rotation */
} cd_pub_body;

/* A tenant's name as principals carry it (cd_principals.h); "" when
 * principals are not set. */
#define CD_PUB_TENANT_MAX 64

typedef struct cd_pub_snap {
  atomic_int refs;
  char scene[CD_PUB_NAME_MAX + 1];
  char tenant[CD_PUB_TENANT_MAX]; /* of the principal whose query published it ("" = none) */
  uint64_t version;       /* set by cd_publish_put: 1, 2, ... per scene */
  uint64_t started_ns;    /* when its query started (cd_stats_now_ns): the latest is the one started last */
  double wall_s;          /* when it was published (Unix time) */
  int32_t nbodies;
  cd_pub_body *bodies;
  int64_t npairs;
  cd_pub_pair **pairs;    /* a pair may be NULL (out of memory copying it) */
  char *json;             /* encoded once, on the codec thread (cd_viewer.c) */
  size_t json_len;
} cd_pub_snap;

/* What the engine must compute for a published pair, whatever the client
 * asked: the surface, patches and point contacts (the page draws them). */
void cd_publish_engine_options(ce_options *o);
/* Copy a pair's result (worker thread). wire: the converted PairResult (its
 * strain energy, when the protocol has the field), may be NULL. NULL when
 * out of memory. */
cd_pub_pair *cd_publish_pair_new(uint32_t a, uint32_t b, const ce_result *r, const void *wire);
void cd_publish_pair_free(cd_pub_pair *p);

/* A snapshot holding one reference, its pairs array taken over. */
cd_pub_snap *cd_publish_snap_new(const char *scene, int32_t nbodies, int64_t npairs, cd_pub_pair **pairs);
void cd_publish_snap_ref(cd_pub_snap *s);
void cd_publish_snap_unref(cd_pub_snap *s);

typedef struct cd_publish cd_publish;
cd_publish *cd_publish_create(uint64_t max_scenes);
void cd_publish_destroy(cd_publish *t);
/* Scenes are kept per tenant: two tenants may each publish a scene of the
 * same name without seeing each other's. A reader passes what it may see:
 * sees(tenant, arg) says whether a tenant's scenes are visible (sees NULL:
 * every scene). */
typedef int (*cd_publish_sees)(const char *tenant, const void *arg);

/* Make snap the latest of its scene (its tenant's scene of that name;
 * taking over its reference) unless the
 * scene's latest started after it (queries of a stream may finish out of
 * order: the result of the update sent last wins); the scene published
 * least recently is forgotten when the table is full. Any thread. */
void cd_publish_put(cd_publish *t, cd_pub_snap *snap);
/* The latest snapshot of a visible scene of that name (of several, the one
 * published last) with a reference the caller drops, or NULL. Any thread. */
cd_pub_snap *cd_publish_get(cd_publish *t, const char *scene, cd_publish_sees sees, const void *arg);
/* Names, tenants and versions of the visible published scenes as a JSON
 * array (malloc'd). */
char *cd_publish_list_json(cd_publish *t, size_t *len, cd_publish_sees sees, const void *arg);
/* Whether geometry id is a body of a visible published scene. */
int cd_publish_shows_geometry(cd_publish *t, const char *id, cd_publish_sees sees, const void *arg);
/* Run fn(arg) after every publication (on the publishing thread). */
void cd_publish_set_notify(cd_publish *t, void (*fn)(void *), void *arg);

#endif

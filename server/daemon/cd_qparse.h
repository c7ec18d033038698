/* cd_qparse.h — a contact query's input as the daemon runs it: bodies
 * resolved to pinned cache entries with checked poses, pairs (explicit or
 * from the broad phase), options (cd_qparse.c). */
#ifndef CD_QPARSE_H
#define CD_QPARSE_H

#include <stdint.h>

#include "cd_cache.h"
#include "cd_publish.h"
#include "cd_status.h"
#include "ce.h"

typedef struct cd_server cd_server;

typedef struct cd_qbody {
  uint32_t id;            /* client body id */
  cd_cache_entry *entry;  /* pinned by whoever owns the array */
  ce_body body;
  uint32_t group, mask;   /* collision filter (all ones when absent) */
} cd_qbody;

typedef struct cd_qpair {
  int32_t a, b;  /* indices into the bodies */
  int32_t model; /* 0 = the query's contact model, else ce_contact_model + 1 */
} cd_qpair;

typedef struct cd_qopts {
  ce_options ce;
  char publish[CD_PUB_NAME_MAX + 1]; /* QueryOptions.publish; "" = not published */
} cd_qopts;

/* Parse and check bodies (field: "contactQuery.bodies"): unique ids,
 * registered READY geometry that tenant sees (NOT_FOUND otherwise, the
 * same for an id only another tenant sees; NULL tenant: every id,
 * cd_tenants.h), finite poses, the
 * quaternion rule, finite velocities, valid material overrides. Pins each
 * body's entry (undo with cd_qparse_bodies_unpin). */
int cd_qparse_bodies(cd_server *s, const char *tenant, Contactd__V1__Body **in, size_t n, const char *field,
                     cd_qbody **out, cd_status *st);
void cd_qparse_bodies_unpin(cd_qbody *b, int32_t n);
/* Body id -> index in b via a sorted copy (n log n to build, log n per
 * lookup), so lookups on untrusted counts never go quadratic. */
typedef struct {
  uint32_t id;
  int32_t i;
} cd_qindex_ent;
typedef struct {
  cd_qindex_ent *e;
  int32_t n;
} cd_qindex;
/* 0, or -1 when out of memory (x is then empty and safe to free). */
int cd_qparse_index_build(cd_qindex *x, const cd_qbody *b, int32_t nb);
/* Index of body id, or -1. */
int32_t cd_qparse_index_find(const cd_qindex *x, uint32_t id);
void cd_qparse_index_free(cd_qindex *x);

/* Options (field: "contactQuery.options"). */
int cd_qparse_opts(const Contactd__V1__QueryOptions *o, const char *field, cd_qopts *out, cd_status *st);

/* An all-pairs query's broad phase with its checked input, to run later:
 * cd_qparse_plan_run touches only its arguments and the bodies' pinned entries,
 * so it may run on a worker. */
typedef struct cd_qplan {
  int on;
  double margin;
  cd_qpair *exclude; /* malloc'd: nexclude pairs never to report */
  size_t nexclude;
  uint64_t max_pairs;
  char field[64]; /* what its errors name ("contactQuery.allPairs") */
} cd_qplan;
int cd_qparse_plan_run(const cd_qplan *p, const cd_qbody *b, int32_t nb, cd_qpair **out, int64_t *nout, cd_status *st);
void cd_qparse_plan_free(cd_qplan *p);

/* Explicit pairs by body id → index pairs (checked); or, when all is
 * non-NULL, the broad phase: run now, or, when `later` is non-NULL and
 * there are CD_BROADPHASE_OFF_LOOP_BODIES bodies or more, only checked and
 * left in *later (later->on set, *out NULL). */
int cd_qparse_pairs_resolve(const cd_qbody *b, int32_t nb, Contactd__V1__Pair **pairs, size_t npairs,
                      const Contactd__V1__AllPairs *all, const char *field, uint64_t max_pairs, cd_qplan *later,
                      cd_qpair **out, int64_t *nout, cd_status *st);

#endif

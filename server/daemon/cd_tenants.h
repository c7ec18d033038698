/* cd_tenants.h — which tenant sees which geometry id (docs/security.md).
 *
 * The cache is content-addressed and shared: the same bytes are built
 * once, whoever registers them. What a tenant may name is not: a tenant
 * sees an id once a principal of that tenant has registered it, and no
 * longer once one of its principals releases it (ReleaseGeometry). To a
 * tenant that does not see an id, HasGeometry, queries, streams and
 * RegisterReply.already_cached answer exactly as if the id were not cached.
 * A principal of tenant "*", and every connection when the server has no
 * principals, sees every id (and costs nothing here).
 *
 * This table is the server's memory of (tenant, id) pairs: set by
 * registrations and releases on this server, and by the store's markers
 * (cd_store_get_seen) that cd_fetch.c asks for on a miss, so visibility
 * survives a restart (dir:) and reaches other replicas (Redis). With a
 * store, the store is the authority and this table its copy: a pair not
 * confirmed for tenant_recheck_ms is confirmed again when next used
 * (answered from here meanwhile), so a release on another replica reaches
 * this one within that time and one store lookup. At most
 * tenant_visible_max pairs are kept: past that the oldest is forgotten
 * here (a store, if any, still has it; without one, that tenant's next use
 * of the id is refused as unknown and it registers it again).
 *
 * Any thread: one mutex. */
#ifndef CD_TENANTS_H
#define CD_TENANTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct cd_tenants cd_tenants;
typedef struct cd_conn cd_conn;

cd_tenants *cd_tenants_create(uint64_t max_pairs);
void cd_tenants_destroy(cd_tenants *t);

/* The tenant whose visibility applies to c's requests, or NULL when c sees
 * every id (no principals, not authenticated yet, or tenant "*"). */
const char *cd_tenants_of(cd_conn *c);

/* Whether tenant sees id (always, for a NULL tenant). */
int cd_tenants_sees(cd_tenants *t, const char *tenant, const char *id);
/* tenant sees id from now on: 1 if it did not before, 0 if it did, -1 when
 * out of memory (it does not then). */
int cd_tenants_add(cd_tenants *t, const char *tenant, const char *id);
/* tenant no longer sees id: 1 if it did. */
int cd_tenants_remove(cd_tenants *t, const char *tenant, const char *id);
/* Whether tenant sees id, and whether to confirm it with the store: 0 it
 * does not, 1 it does, 2 it does but was last confirmed (added, or
 * stamped by a 2 answer) more than recheck_ms ago (0 = never) — the pair
 * is stamped now, so one user of it asks the store, and *stamp is set for
 * cd_tenants_forget. A NULL tenant sees every id (1). */
int cd_tenants_check(cd_tenants *t, const char *tenant, const char *id, uint64_t recheck_ms, uint64_t *stamp);
/* The store says tenant does not see id: forget the pair unless it was
 * added or confirmed again since the check that returned stamp. */
void cd_tenants_forget(cd_tenants *t, const char *tenant, const char *id, uint64_t stamp);
/* Pairs held. */
uint64_t cd_tenants_count(cd_tenants *t);

#endif

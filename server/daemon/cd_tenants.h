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
 * survives a restart (dir:) and reaches other replicas (Redis). At most
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
/* Pairs held. */
uint64_t cd_tenants_count(cd_tenants *t);

#endif

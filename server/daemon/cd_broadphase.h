/* cd_broadphase.h — the scene broad phase for allPairs queries: bounding
 * spheres (from each cache entry) swept along x, half spaces tested against
 * every finite body, collision-filter groups, exclusions. Pairs come out
 * with a = the smaller body id, sorted by (a, b). */
#ifndef CD_BROADPHASE_H
#define CD_BROADPHASE_H

#include "cd_query.h"

int cd_broadphase(const cd_qbody *b, int32_t n, double margin, const cd_qpair *exclude, size_t nexclude,
                  uint64_t max_pairs, const char *field, cd_qpair **out, int64_t *nout, cd_status *st);

#endif

/* cd_reply.h — one pair's engine result as a wire message (cd_reply.c),
 * and the memory that takes. Any thread: touches only its arguments. */
#ifndef CD_REPLY_H
#define CD_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "cd_budget.h"
#include "ce.h"
#include "contactd.pb-c.h"

/* Upper bound on the bytes cd_reply_convert takes from its budget for one
 * engine result under options o (from the counts alone: nothing is
 * allocated). */
size_t cd_reply_estimate(const ce_result *r, const ce_options *o);
/* The wire message of one pair's result, allocated in b (NULL when b runs
 * out). a and b_id are the client's body ids. */
Contactd__V1__PairResult *cd_reply_convert(cd_budget *b, const ce_options *o, uint32_t a, uint32_t b_id,
                                           const ce_result *r, uint64_t us);

#endif

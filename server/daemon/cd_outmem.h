/* cd_outmem.h — output_memory_bytes, the bound for the reply bytes queued
 * on all connections together (cd_outmem.c). Every call on the loop that
 * owns the connection named (cd_outmem_check: any loop). */
#ifndef CD_OUTMEM_H
#define CD_OUTMEM_H

#include <stdint.h>

typedef struct cd_server cd_server;
typedef struct cd_conn cd_conn;

/* output_memory_bytes 0: an eighth of the machine's memory, at least 64 MiB. */
uint64_t cd_outmem_default(void);
/* n reply bytes queued on a connection / written or dropped from c. */
void cd_outmem_queued(cd_server *s, cd_conn *c, uint64_t n);
void cd_outmem_done(cd_server *s, cd_conn *c, uint64_t n);
/* c is closing: its queued bytes are on their way out. */
void cd_outmem_closing(cd_server *s, cd_conn *c);
/* Over the budget: cut the connections holding the most, until it fits. */
void cd_outmem_check(cd_server *s);

#endif

/* td_faults.h — allocation failures on request (td_faults.c).
 *
 * Only in programs linked with td_faults.c and -Wl,--wrap=malloc,
 * --wrap=calloc,--wrap=realloc (CMake: contactd_link_faults). */
#ifndef TD_FAULTS_H
#define TD_FAULTS_H

/* The calling thread's allocation number k (0-based, counted from this
 * call) and every one after it fail; k < 0 turns failures off. */
void td_faults_fail_from(long k);
/* Allocations the calling thread asked for since td_faults_fail_from. */
long td_faults_count(void);
/* Between these the calling thread's allocations are neither counted nor
 * failed: for a test's own allocations inside a failure window. */
void td_faults_pause(void);
void td_faults_resume(void);

#endif

/* invariant.h - checks of a whole object's invariants, for the state
 * machines (comm requests, serve slots, launch attempts), in the manner of
 * SQLite's pager (assert_pager_state): each machine has one checker
 *
 *     static int comm_req_state_ok(const gf_comm_req *r);
 *
 * that returns 1 when every field agrees with the state the object claims
 * to be in (a finished request holds no buffer, a slot being swapped has a
 * loaded successor, ...), and GF_ASSERT_STATE(comm_req_state_ok(r)) stands
 * at each transition.
 *
 * GF_ASSERT_STATE aborts with the expression, file and line when the
 * checker returns 0, and only where GF_STATE_CHECKS is defined: Debug
 * builds and the sanitizer build (cmake/GanflowOptions.cmake). Elsewhere
 * it compiles to nothing and does not evaluate its argument, so a checker
 * may be slow (walk a list) but must have no side effects. Define the
 * checker inside `#if defined(GF_STATE_CHECKS)` too: in the other builds
 * nothing calls it. */
#ifndef GF_INVARIANT_H
#define GF_INVARIANT_H

#if defined(GF_STATE_CHECKS)
#include <stdio.h>
#include <stdlib.h>
#define GF_ASSERT_STATE(ok)                                              \
  do {                                                                   \
    if (!(ok)) {                                                         \
      fprintf(stderr, "%s:%d: state check failed: %s\n", __FILE__,       \
              __LINE__, #ok);                                            \
      abort();                                                           \
    }                                                                    \
  } while (0)
#else
#define GF_ASSERT_STATE(ok) ((void)0)
#endif

#endif

/* train_dist.h - what ganflow-train's loop needs from the ranks of a job
 * (DESIGN §4.6), private to gf_trainer: agreeing on a failure, host values
 * moved through the communicator whatever memory its backend uses, the
 * parameter digest check, and the relay that brings every rank's system
 * metrics to rank 0, which alone talks to MLflow.
 *
 * With no communicator (one rank) every call is a local no-op, so the loop
 * is written once. */
#ifndef GF_TRAIN_DIST_H
#define GF_TRAIN_DIST_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gf/comm.h"
#include "gf/gan.h"

typedef struct gf_dist {
  gf_comm *comm;     /* borrowed; NULL: one rank */
  int rank, world;
  gf_ctx *ctx;       /* borrowed: the training ctx (device staging) */
  gf_tensor stage;   /* owned: device staging for a device-buffer comm */
} gf_dist;

/* Sets d for comm (NULL: rank 0 of 1) and ctx. Allocates nothing yet. */
void gf_dist_init(gf_dist *d, gf_comm *comm, gf_ctx *ctx);
void gf_dist_free(gf_dist *d);

/* Every rank passes its own status of a phase; returns the first non-OK
 * status of any rank (GF_OK when all are fine). A rank whose own status
 * is OK gets a message naming the rank that failed; a failed rank keeps
 * its own message in *err. */
gf_status gf_dist_agree(gf_dist *d, gf_status mine, const char *phase,
                        gf_err *err);

/* In-place sum of n doubles over the ranks (host memory). */
gf_status gf_dist_sum_f64(gf_dist *d, double *buf, int n, gf_err *err);
/* Rank 0's bytes to every rank (host memory; small values: a device comm
 * sends them as an allgather). */
gf_status gf_dist_bcast(gf_dist *d, void *buf, size_t bytes, gf_err *err);
/* all[r * bytes ..] = rank r's mine (host memory). */
gf_status gf_dist_allgather(gf_dist *d, const void *mine, size_t bytes,
                            void *all, gf_err *err);
/* Every rank's digest hex (a state's SHA-256) against rank 0's:
 * GF_EINTEGRITY naming the first rank that differs. */
gf_status gf_dist_check_digest(gf_dist *d, const char *hex, int64_t step,
                               gf_err *err);
/* Every rank's parameter digest equal (BN running statistics too when
 * they are meant to agree: sync BN); GF_EINTEGRITY naming the ranks and
 * the step otherwise. */
gf_status gf_dist_check_params(gf_dist *d, const gf_gan *gan, bool bn,
                               int64_t step, gf_err *err);

/* ---- system metrics of every rank, through rank 0 ------------------------ */

#define GF_RELAY_MAX 24
#define GF_RELAY_NAME 64

typedef struct gf_relay_entry {
  char name[GF_RELAY_NAME]; /* "system/cpu_utilization_percentage" */
  double value;
  int64_t step, timestamp_ms;
} gf_relay_entry;

/* The figures one rank's monitor produced since the last exchange. */
typedef struct gf_relay_buf {
  int32_t n, dropped;
  gf_relay_entry e[GF_RELAY_MAX];
} gf_relay_buf;

typedef struct gf_relay {
  pthread_mutex_t mu;
  gf_relay_buf pending;  /* filled by the monitor's thread */
} gf_relay;

void gf_relay_init(gf_relay *r);
void gf_relay_destroy(gf_relay *r);
/* The monitor's emit callback (user = gf_relay *). */
void gf_relay_emit(void *user, const char *name, double value, int64_t step,
                   int64_t timestamp_ms);
/* Every rank calls it at the same step: gathers every rank's pending
 * figures into out (world entries, caller-owned) and empties pending. */
gf_status gf_relay_exchange(gf_relay *r, gf_dist *d, gf_relay_buf *out,
                            gf_err *err);
/* Room for a relayed name with its rank prefix (gf_relay_node_name). */
#define GF_RELAY_NODE_NAME (GF_RELAY_NAME + 32)
/* A figure of rank `rank` under a name of that rank alone: "system/x" as
 * MLflow names a node's system metric, "system/rank_<rank>/x" (MLflow's
 * node_id prefix), and the monitor's own "perf/x" likewise as
 * "perf/rank_<rank>/x" (every rank samples at the same steps: one name
 * for all would put a point of each rank at every step). name is shorter
 * than GF_RELAY_NAME (what the relay carries) and cap at least
 * GF_RELAY_NODE_NAME, so the result fits; dst is "" (a key the metric
 * logger refuses, counted as dropped) when a caller breaks that. */
void gf_relay_node_name(char *dst, size_t cap, const char *name, int rank);

#endif

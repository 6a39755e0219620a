/* metrics.h - the counters behind GET /metrics (Prometheus text format
 * 0.0.4): requests and failures per endpoint, answers per status code,
 * latency histograms, queue depth, images generated; the model gauges
 * (loaded version, reloads, failed reloads) come from the slots. All
 * counters are C11 atomics updated without locks. */
#ifndef GFS_METRICS_H
#define GFS_METRICS_H

#include <stdatomic.h>
#include <stddef.h>

#include "gfs/slot.h"

typedef enum gfs_endpoint {
  GFS_EP_GENERATE,    /* GET /v1/models/{name}/generate */
  GFS_EP_INFER,       /* POST /v2/models/{name}/infer */
  GFS_EP_INVOCATIONS, /* POST /invocations */
  GFS_EP_METADATA,    /* GET /v2/models/{name}[/ready] */
  GFS_EP_HEALTH,      /* /ping, /health, /version, /v2/health/... */
  GFS_EP_METRICS,     /* GET /metrics */
  GFS_EP_PAGE,        /* GET / */
  GFS_EP_OTHER,       /* anything else (404s) */
  GFS_EP_COUNT
} gfs_endpoint;

#define GFS_LAT_BUCKETS 13 /* finite upper bounds; +Inf is one more */
#define GFS_N_CODES 13     /* status codes counted one by one */

typedef struct gfs_metrics {
  atomic_ulong requests[GFS_EP_COUNT];
  atomic_ulong failures[GFS_EP_COUNT];   /* answers with status >= 400 */
  atomic_ulong codes[GFS_N_CODES + 1];   /* per code of gfs_metric_codes;
                                            the last: any other code */
  atomic_ulong lat_bucket[GFS_EP_COUNT][GFS_LAT_BUCKETS + 1]; /* not
                                            cumulative; the last is +Inf */
  atomic_ulong lat_sum_us[GFS_EP_COUNT]; /* microseconds */
  atomic_ulong images;                   /* images generated */
  atomic_ulong passes;                   /* generator forward passes */
  atomic_ulong shared_jobs;              /* jobs that shared a pass with
                                            another (--batch-rows) */
  atomic_long queue_depth;               /* jobs waiting for a worker */
  atomic_long in_flight;                 /* jobs queued or running */
  atomic_ulong rejected;                 /* 429: queue full */
  atomic_ulong deadline_exceeded;        /* jobs dropped past the deadline */
  atomic_long resident;                  /* loaded versions not yet freed
                                            (serving + draining + loading) */
} gfs_metrics;

void gfs_metrics_init(gfs_metrics *m);
/* Counts one finished request of endpoint ep with its status and time. */
void gfs_metrics_observe(gfs_metrics *m, gfs_endpoint ep, int status,
                         double seconds);
/* The Prometheus text for m and the n slots. Memory: *out is malloc'd
 * (caller frees); GF_ENOMEM when it could not be built. */
gf_status gfs_metrics_render(gfs_metrics *m, gfs_slot *slots, int n,
                             char **out, size_t *len, gf_err *err);
/* Static endpoint label ("generate"). */
const char *gfs_endpoint_name(gfs_endpoint ep);

#endif

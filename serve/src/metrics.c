/* metrics.c - counters and their Prometheus text; see gfs/metrics.h. */
#include <string.h>

#include "gf/strbuf.h"
#include "gfs/metrics.h"

static const double BOUNDS[GFS_LAT_BUCKETS] = {
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05,
    0.1,    0.25,  0.5,   1.0,   2.5,  10.0};
static const int CODES[GFS_N_CODES] = {200, 204, 400, 401, 404, 405, 408,
                                       413, 415, 429, 500, 503, 504};
static const char *const EP_NAMES[GFS_EP_COUNT] = {
    "generate", "infer", "invocations", "metadata",
    "health",   "metrics", "page",      "other"};

const char *gfs_endpoint_name(gfs_endpoint ep) {
  return (unsigned)ep < GFS_EP_COUNT ? EP_NAMES[ep] : "other";
}

void gfs_metrics_init(gfs_metrics *m) {
  for (int e = 0; e < GFS_EP_COUNT; e++) {
    atomic_init(&m->requests[e], 0);
    atomic_init(&m->failures[e], 0);
    atomic_init(&m->lat_sum_us[e], 0);
    for (int b = 0; b <= GFS_LAT_BUCKETS; b++)
      atomic_init(&m->lat_bucket[e][b], 0);
  }
  for (int c = 0; c <= GFS_N_CODES; c++) atomic_init(&m->codes[c], 0);
  atomic_init(&m->images, 0);
  atomic_init(&m->passes, 0);
  atomic_init(&m->shared_jobs, 0);
  atomic_init(&m->queue_depth, 0);
  atomic_init(&m->in_flight, 0);
  atomic_init(&m->rejected, 0);
  atomic_init(&m->deadline_exceeded, 0);
  atomic_init(&m->resident, 0);
}

void gfs_metrics_observe(gfs_metrics *m, gfs_endpoint ep, int status,
                         double seconds) {
  if ((unsigned)ep >= GFS_EP_COUNT) ep = GFS_EP_OTHER;
  atomic_fetch_add(&m->requests[ep], 1);
  if (status >= 400) atomic_fetch_add(&m->failures[ep], 1);
  int c = 0;
  while (c < GFS_N_CODES && CODES[c] != status) c++;
  atomic_fetch_add(&m->codes[c], 1);
  int b = 0;
  while (b < GFS_LAT_BUCKETS && seconds > BOUNDS[b]) b++;
  atomic_fetch_add(&m->lat_bucket[ep][b], 1);
  if (seconds < 0) seconds = 0;
  atomic_fetch_add(&m->lat_sum_us[ep], (unsigned long)(seconds * 1e6));
}

static void label(gf_strbuf *b, const char *s) {
  /* Prometheus label values escape \, " and newlines. */
  for (const char *p = s; *p; p++) {
    if (*p == '\\' || *p == '"') gf_strbuf_append(b, "\\", 1);
    if (*p == '\n') gf_strbuf_puts(b, "\\n");
    else gf_strbuf_append(b, p, 1);
  }
}

static void render_requests(gf_strbuf *b, gfs_metrics *m) {
  gf_strbuf_puts(b, "# HELP ganflow_serve_requests_total Requests answered, "
                    "by endpoint.\n# TYPE ganflow_serve_requests_total "
                    "counter\n");
  for (int e = 0; e < GFS_EP_COUNT; e++)
    gf_strbuf_printf(b, "ganflow_serve_requests_total{endpoint=\"%s\"} %lu\n",
                     EP_NAMES[e], atomic_load(&m->requests[e]));
  gf_strbuf_puts(b, "# HELP ganflow_serve_request_failures_total Requests "
                    "answered with a 4xx or 5xx status, by endpoint.\n"
                    "# TYPE ganflow_serve_request_failures_total counter\n");
  for (int e = 0; e < GFS_EP_COUNT; e++)
    gf_strbuf_printf(b,
                     "ganflow_serve_request_failures_total{endpoint=\"%s\"} "
                     "%lu\n", EP_NAMES[e], atomic_load(&m->failures[e]));
  gf_strbuf_puts(b, "# HELP ganflow_serve_responses_total Answers by HTTP "
                    "status code.\n# TYPE ganflow_serve_responses_total "
                    "counter\n");
  for (int c = 0; c <= GFS_N_CODES; c++) {
    if (c < GFS_N_CODES)
      gf_strbuf_printf(b, "ganflow_serve_responses_total{code=\"%d\"} %lu\n",
                       CODES[c], atomic_load(&m->codes[c]));
    else
      gf_strbuf_printf(b, "ganflow_serve_responses_total{code=\"other\"} "
                          "%lu\n", atomic_load(&m->codes[c]));
  }
  gf_strbuf_puts(b, "# HELP ganflow_serve_request_duration_seconds Time from "
                    "the request's headers to the end of its answer.\n"
                    "# TYPE ganflow_serve_request_duration_seconds "
                    "histogram\n");
  for (int e = 0; e < GFS_EP_COUNT; e++) {
    unsigned long cum = 0;
    for (int k = 0; k <= GFS_LAT_BUCKETS; k++) {
      cum += atomic_load(&m->lat_bucket[e][k]);
      if (k < GFS_LAT_BUCKETS)
        gf_strbuf_printf(b, "ganflow_serve_request_duration_seconds_bucket{"
                            "endpoint=\"%s\",le=\"%g\"} %lu\n", EP_NAMES[e],
                         BOUNDS[k], cum);
      else
        gf_strbuf_printf(b, "ganflow_serve_request_duration_seconds_bucket{"
                            "endpoint=\"%s\",le=\"+Inf\"} %lu\n", EP_NAMES[e],
                         cum);
    }
    gf_strbuf_printf(b, "ganflow_serve_request_duration_seconds_sum{endpoint="
                        "\"%s\"} %.6f\n", EP_NAMES[e],
                     (double)atomic_load(&m->lat_sum_us[e]) / 1e6);
    gf_strbuf_printf(b, "ganflow_serve_request_duration_seconds_count{"
                        "endpoint=\"%s\"} %lu\n", EP_NAMES[e], cum);
  }
}

static void render_models(gf_strbuf *b, gfs_slot *slots, int n) {
  gf_strbuf_puts(b, "# HELP ganflow_serve_model_loaded 1 when a version of "
                    "the model is serving.\n# TYPE ganflow_serve_model_loaded "
                    "gauge\n# HELP ganflow_serve_model_version The registry "
                    "version serving (0 when none).\n# TYPE "
                    "ganflow_serve_model_version gauge\n# HELP "
                    "ganflow_serve_model_reloads_total Versions loaded and "
                    "swapped in.\n# TYPE ganflow_serve_model_reloads_total "
                    "counter\n# HELP ganflow_serve_model_reload_failures_total "
                    "Versions that failed to download, verify or load (the "
                    "old one kept serving).\n# TYPE "
                    "ganflow_serve_model_reload_failures_total counter\n");
  for (int i = 0; i < n; i++) {
    gfs_slot *s = &slots[i];
    gf_generator *m = gfs_slot_acquire(s);
    gf_strbuf *lb = &(gf_strbuf){0};
    gf_strbuf_puts(lb, "model=\"");
    label(lb, s->name);
    gf_strbuf_puts(lb, "\",uri=\"");
    label(lb, s->uri);
    gf_strbuf_puts(lb, "\"");
    const char *l = lb->data ? lb->data : "";
    gf_strbuf_printf(b, "ganflow_serve_model_loaded{%s} %d\n", l, m ? 1 : 0);
    gf_strbuf_printf(b, "ganflow_serve_model_version{%s} %s\n", l,
                     m ? m->version : "0");
    gf_strbuf_printf(b, "ganflow_serve_model_reloads_total{%s} %lu\n", l,
                     atomic_load(&s->reloads));
    gf_strbuf_printf(b, "ganflow_serve_model_reload_failures_total{%s} %lu\n",
                     l, atomic_load(&s->reload_failures));
    gf_strbuf_free(lb);
    gf_generator_unref(m);
  }
}

gf_status gfs_metrics_render(gfs_metrics *m, gfs_slot *slots, int n,
                             char **out, size_t *len, gf_err *err) {
  gf_strbuf b;
  gf_strbuf_init(&b);
  render_requests(&b, m);
  gf_strbuf_printf(&b, "# HELP ganflow_serve_queue_depth Generation jobs "
                       "waiting for a worker.\n# TYPE "
                       "ganflow_serve_queue_depth gauge\n"
                       "ganflow_serve_queue_depth %ld\n",
                   atomic_load(&m->queue_depth));
  gf_strbuf_printf(&b, "# HELP ganflow_serve_in_flight Generation jobs queued "
                       "or running.\n# TYPE ganflow_serve_in_flight gauge\n"
                       "ganflow_serve_in_flight %ld\n",
                   atomic_load(&m->in_flight));
  gf_strbuf_printf(&b, "# HELP ganflow_serve_rejected_total Requests refused "
                       "with 429 (queue full).\n# TYPE "
                       "ganflow_serve_rejected_total counter\n"
                       "ganflow_serve_rejected_total %lu\n",
                   atomic_load(&m->rejected));
  gf_strbuf_printf(&b, "# HELP ganflow_serve_deadline_exceeded_total Jobs "
                       "dropped after waiting past the request deadline.\n"
                       "# TYPE ganflow_serve_deadline_exceeded_total counter\n"
                       "ganflow_serve_deadline_exceeded_total %lu\n",
                   atomic_load(&m->deadline_exceeded));
  gf_strbuf_printf(&b, "# HELP ganflow_serve_images_total Images generated.\n"
                       "# TYPE ganflow_serve_images_total counter\n"
                       "ganflow_serve_images_total %lu\n",
                   atomic_load(&m->images));
  gf_strbuf_printf(&b, "# HELP ganflow_serve_forward_passes_total Generator "
                       "forward passes.\n"
                       "# TYPE ganflow_serve_forward_passes_total counter\n"
                       "ganflow_serve_forward_passes_total %lu\n"
                       "# HELP ganflow_serve_shared_jobs_total Requests "
                       "whose images shared a forward pass with another "
                       "request's.\n"
                       "# TYPE ganflow_serve_shared_jobs_total counter\n"
                       "ganflow_serve_shared_jobs_total %lu\n",
                   atomic_load(&m->passes), atomic_load(&m->shared_jobs));
  gf_strbuf_printf(&b, "# HELP ganflow_serve_model_versions_resident Loaded "
                       "versions in memory: serving, still finishing requests "
                       "after a swap, or loading.\n# TYPE "
                       "ganflow_serve_model_versions_resident gauge\n"
                       "ganflow_serve_model_versions_resident %ld\n",
                   atomic_load(&m->resident));
  render_models(&b, slots, n);
  *out = gf_strbuf_take(&b, len);
  if (!*out) return gf_fail(err, GF_ENOMEM, "out of memory rendering metrics");
  return GF_OK;
}

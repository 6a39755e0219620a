/* monitor_names.c - prints, one per line, every metric name the resource
 * monitor emits in a 2-rank job with 2 GPUs (the fake NVML of
 * test_monitor.c) and steps fed, for test_mlflow_system_names.py, which
 * checks them against the names MLflow's own system-metrics monitor
 * writes. Exit 1 when the monitor cannot run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gf/monitor.h"

typedef struct names {
  char list[64][96];
  int n;
} names;

/* Called from the sampler thread only; distinct names kept. */
static void collect(void *user, const char *name, double value, int64_t step,
                    int64_t ts) {
  (void)value;
  (void)step;
  (void)ts;
  names *s = user;
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->list[i], name) == 0) return;
  if (s->n < 64) snprintf(s->list[s->n++], sizeof s->list[0], "%s", name);
}

int main(void) {
  names *s = calloc(1, sizeof *s);
  if (!s) return 1;
  gf_monitor_config cfg = gf_monitor_config_default();
  cfg.interval_s = 0.05;
  cfg.emit = collect;
  cfg.user = s;
  cfg.nvml_library = GF_FAKE_NVML_PATH;
  cfg.world_size = 2;
  gf_monitor *m = NULL;
  gf_err err;
  memset(&err, 0, sizeof err);
  if (gf_monitor_start(&m, &cfg, &err) != GF_OK) {
    fprintf(stderr, "monitor: %s\n", err.msg);
    return 1;
  }
  for (int i = 0; i < 40; i++) {
    gf_monitor_add_step(m, 0.01, 0.02, 0.003);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  gf_monitor_stop(m);
  gf_monitor_free(m);
  for (int i = 0; i < s->n; i++) printf("%s\n", s->list[i]);
  free(s);
  return 0;
}

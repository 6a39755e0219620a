/* fuzz_launch_capacity.c - fuzz target for gf_capacity_parse, the parser
 * of `ganflow launch --elastic-capacity`'s sources (a capacity file that a
 * cloud autoscaler rewrites, an Open MPI host file; cli/src/
 * launch_capacity.c), and of the planner over what it parsed. The first
 * byte picks the kind (even: file, odd: hostfile); the rest is the text.
 * Any input gives GF_EFORMAT with a NUL-terminated "line N: ..." message,
 * or hosts that keep the documented bounds and a plan that names a world
 * the job can run. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gf/launch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gf_capacity g_cap; /* large: kept off the stack */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  gf_cap_kind kind = data[0] & 1 ? GF_CAP_HOSTFILE : GF_CAP_FILE;
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  gf_err err;
  memset(&err, 0, sizeof err);
  gf_status st = gf_capacity_parse(text, len, kind, &g_cap, &err);
  if (st != GF_OK) {
    if (st != GF_EFORMAT || !memchr(err.msg, '\0', sizeof err.msg) ||
        !err.msg[0])
      abort();
    if (len <= GF_CAP_FILE_MAX && strncmp(err.msg, "line ", 5) != 0) abort();
    return 0;
  }
  if (g_cap.n < 0 || g_cap.n > GF_CAP_MAX_HOSTS) abort();
  for (int i = 0; i < g_cap.n; i++) {
    const gf_cap_host *h = &g_cap.h[i];
    size_t nl = strnlen(h->name, sizeof h->name);
    if (nl == 0 || nl > GF_CAP_HOST_MAX || h->slots < 0 ||
        h->slots > GF_LAUNCH_MAX_RANKS || h->leaving < -1 ||
        h->leaving > 100000000000LL || h->line < 1 ||
        (kind == GF_CAP_HOSTFILE && h->leaving != -1) ||
        (i && h->line <= g_cap.h[i - 1].line))
      abort();
  }
  gf_launch_opts o;
  memset(&o, 0, sizeof o);
  gf_train_config_default(&o.train);
  o.nproc = 8;
  o.nproc_min = 1;
  o.cap_kind = kind;
  o.cap_margin = 30;
  o.train.batch = 64;
  o.train.grad_accum = 1;
  const double now = 1800000000.0;
  int present = 0, usable = 0;
  gf_capacity_slots(&g_cap, now, o.cap_margin, &present, &usable);
  if (present < 0 || usable < 0 || usable > present ||
      present > GF_LAUNCH_MAX_RANKS)
    abort();
  for (int running = 0; running <= 8; running += 4) {
    gf_cap_plan p;
    gf_capacity_plan(&o, NULL, &g_cap, running, 8, now, &p);
    if (p.world < 0 || p.world > o.nproc || (p.world && p.world > usable &&
        p.act != GF_CAP_KEEP) || !memchr(p.text, '\0', sizeof p.text) ||
        (p.act != GF_CAP_KEEP) != (p.text[0] != '\0') ||
        (p.act == GF_CAP_GROW && p.world <= running) ||
        (p.act == GF_CAP_SHRINK && usable >= running) ||
        (p.act == GF_CAP_LOST && present >= running))
      abort();
  }
  return 0;
}

/* comm_local.c - the local engine: world 1, no library. Every reduction,
 * broadcast and barrier is already complete (the sum over one rank is the
 * buffer; AVG multiplies by 1/1; f32-as-bf16 rounds it to bf16); allgather
 * copies `mine` to `all`. Lets
 * the trainer call the same gf_comm code in a plain single-process run. */
#include <string.h>

#include "comm_impl.h"

static gf_status local_init(gf_comm *c, gf_err *err) {
  (void)err;
  c->impl = NULL;
  return GF_OK;
}

static void local_fini(gf_comm *c, int quiet) {
  (void)c;
  (void)quiet;
}

static void local_abort(gf_comm *c, int code) {
  (void)c;
  (void)code;
}

static gf_status local_start(gf_comm *c, int slot, gf_err *err) {
  (void)err;
  const gf_comm_req *r = &c->reqs[slot];
  int kind = r->steps[r->cur].kind;
  if (kind == GF_STEP_ALLGATHER && r->count && r->buf != r->sendbuf)
    memmove(r->buf, r->sendbuf, r->count);
  if (kind == GF_STEP_PACK) {
    /* the sum over one rank is the buffer: rounded to bf16 in place, as
     * PACK and UNPACK would leave it (the no-op all-reduce between them
     * needs no copy) */
    float *f = r->buf;
    for (size_t i = 0; i < r->count; i++) {
      uint16_t h;
      gf_comm_bf16_from_f32(&h, &f[i], 1);
      gf_comm_bf16_to_f32(&f[i], &h, 1);
    }
  }
  return GF_OK;
}

static gf_status local_test(gf_comm *c, int slot, int *done, gf_err *err) {
  (void)c;
  (void)slot;
  (void)err;
  *done = 1;
  return GF_OK;
}

const gf_comm_ops gf_comm_local_ops = {
    .name = "local",
    .device_buffers = 0,
    .lanes = 1,
    .serial_issue = 0,
    .fence = 0,
    .init = local_init,
    .init_hier = NULL,
    .fini = local_fini,
    .abort = local_abort,
    .check_buf = NULL,
    .begin = NULL,
    .step_start = local_start,
    .step_test = local_test,
    .release = NULL,
};

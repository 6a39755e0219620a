/* comm_core.c - what gf_comm's engines share below comm.c: the pause of a
 * waiting loop, element sizes, bf16 rounding, the host arithmetic of the
 * steps (the tree's add, the scale by 1/world, the PACK and UNPACK of
 * f32-as-bf16), and MASTER_PORT's listening socket with its message.
 * comm.c (the dispatcher and the request state machine) and every engine
 * (comm_local.c, comm_mpi.c, comm_nccl.c, comm_tcp.c) call it; it calls
 * none of them, so no engine needs comm.c. Not here: requests, engines,
 * sockets themselves (gf/sock.h). */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_impl.h"
#include "gf/sock.h"

/* ---- waiting and sizes --------------------------------------------------- */

void gf_comm_poll_start(gf_comm_poll *p) {
  p->t0 = gf_comm_now();
  p->delay_ns = 0;
}

void gf_comm_poll_pause(gf_comm_poll *p) {
  if (p->delay_ns == 0) {
    if (gf_comm_now() - p->t0 < GF_COMM_SPIN_S) {
      sched_yield();
      return;
    }
    p->delay_ns = 2000;
  }
  struct timespec ts = {0, p->delay_ns};
  nanosleep(&ts, NULL);
  p->delay_ns = p->delay_ns >= 500000 ? 1000000 : p->delay_ns * 2;
}

size_t gf_comm_dtype_size(gf_comm_dtype dt) {
  switch (dt) {
  case GF_CDT_F32: return 4;
  case GF_CDT_F64: return 8;
  case GF_CDT_I64: return 8;
  case GF_CDT_U8: return 1;
  case GF_CDT_BF16: return 2;
  case GF_CDT_F32_AS_BF16: return 4;
  }
  return 0;
}

/* ---- bf16 ---------------------------------------------------------------- */

/* The bf16 nearest f, ties to even: add half an ulp of the kept part (less
 * one, plus the kept part's lowest bit) and cut; a NaN is quieted instead,
 * since the addition could carry it into an infinity. */
static inline uint16_t bf16_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float f32_of(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

void gf_comm_bf16_from_f32(uint16_t *dst, const float *src, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = bf16_of(src[i]);
}

void gf_comm_bf16_to_f32(float *dst, const uint16_t *src, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = f32_of(src[i]);
}

gf_status gf_comm_host_pack(gf_comm_req *r, void **stage, size_t *cap,
                            gf_err *err) {
  size_t need = r->count * sizeof(uint16_t);
  if (need > *cap) {
    void *nb = malloc(need);
    if (!nb)
      return gf_fail(err, GF_ENOMEM,
                     "comm: cannot allocate %zu bytes for the bf16 copy", need);
    free(*stage);
    *stage = nb;
    *cap = need;
  }
  gf_comm_bf16_from_f32(*stage, r->buf, r->count);
  r->wbuf = *stage;
  return GF_OK;
}

void gf_comm_host_unpack(gf_comm_req *r) {
  if (r->wbuf) gf_comm_bf16_to_f32(r->buf, r->wbuf, r->count);
}

void gf_comm_host_add(gf_comm_dtype dt, void *dst, const void *lower,
                      const void *higher, size_t n) {
  switch (dt) {
  case GF_CDT_F32: {
    float *d = dst;
    const float *a = lower, *b = higher;
    for (size_t i = 0; i < n; i++) d[i] = a[i] + b[i];
    break;
  }
  case GF_CDT_F64: {
    double *d = dst;
    const double *a = lower, *b = higher;
    for (size_t i = 0; i < n; i++) d[i] = a[i] + b[i];
    break;
  }
  case GF_CDT_I64: {
    /* wrap-around like MPI_SUM on int64 in practice, without the UB */
    int64_t *d = dst;
    const int64_t *a = lower, *b = higher;
    for (size_t i = 0; i < n; i++)
      d[i] = (int64_t)((uint64_t)a[i] + (uint64_t)b[i]);
    break;
  }
  case GF_CDT_BF16: {
    /* each addition in f32, rounded to bf16 */
    uint16_t *d = dst;
    const uint16_t *a = lower, *b = higher;
    for (size_t i = 0; i < n; i++) d[i] = bf16_of(f32_of(a[i]) + f32_of(b[i]));
    break;
  }
  case GF_CDT_U8:          /* not reducible; rejected before */
  case GF_CDT_F32_AS_BF16: /* reduced as BF16 */
    break;
  }
}

void gf_comm_host_scale(gf_comm_dtype dt, void *buf, size_t n, int world) {
  if (dt == GF_CDT_F32 || dt == GF_CDT_F32_AS_BF16) {
    float *p = buf, s = (float)(1.0 / world);
    for (size_t i = 0; i < n; i++) p[i] *= s;
  } else if (dt == GF_CDT_F64) {
    double *p = buf, s = 1.0 / world;
    for (size_t i = 0; i < n; i++) p[i] *= s;
  }
}

/* ---- MASTER_PORT --------------------------------------------------------- */

gf_status gf_comm_listen(const char *who, int port, int *fd, int *bound,
                         gf_err *err) {
  gf_err e;
  if (gf_sock_listen(NULL, port, fd, bound, &e) == GF_OK) return GF_OK;
  int in_use = errno == EADDRINUSE;
  if (port == 0)
    return gf_fail(err, GF_EIO, "%s: cannot open a listening socket: %s", who,
                   e.msg);
  return gf_fail(err, GF_EIO,
                 "%s: rank 0 cannot listen on MASTER_PORT %d: %s%s", who, port,
                 e.msg,
                 in_use ? " (another process holds the port: pick a free "
                          "MASTER_PORT)"
                        : "");
}

/* test_cuda_resume.c - bit-exact resume of GAN training on a device, the
 * way ganflow-train --device cuda --deterministic checkpoints and resumes:
 * the GAN lives on the ctx's device, a host twin (gf_gan_copy_state) is
 * what checkpoint files are written from and loaded into.
 *
 * Each run is a child process (CUDA state never crosses a fork):
 *   A  trains steps 0..N-1 and writes ckpt-N;
 *   B  trains steps 0..K-1, writes ckpt-K and SIGKILLs itself;
 *   C  a fresh process, finds B's newest checkpoint, loads it and trains
 *      K..N-1, writing ckpt-N.
 * A's and C's ckpt-N files must be byte-identical (every G and D tensor,
 * BN statistics, Adam moments and step counts, same metadata).
 * argv[1]: "cuda" (label gpu: exits 77 where there is no GPU; deterministic
 * algorithms) or "cpu" (label unit: the same path through the host twin on
 * the CPU backend, in CI). */
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "file_util.h"
#include "gf/checkpoint.h"
#include "gf/gan.h"

#define N_STEPS 8
#define K_STEPS 3
#define SEED 4242

static int use_cuda;
static char tmp[512];

static void fill_real(float *p, int64_t n, int64_t step) {
  for (int64_t i = 0; i < n; i++)
    p[i] = (float)(((i * 2654435761u + (uint64_t)step * 97u) >> 7) % 255) / 127.0f - 1.0f;
}

static void model_config(gf_model_config *c) {
  gf_model_config_default(c, GF_ARCH_DCGAN);
  c->image_height = c->image_width = 28;
  c->image_channels = 1;
  c->z_dim = 32;
  c->ngf = c->ndf = 16;
}

/* In a child: dies with a message (exit 1) when st is not GF_OK. */
static void ok(gf_status st, const gf_err *e, const char *what) {
  if (st == GF_OK) return;
  fprintf(stderr, "%s: %s\n", what, e->msg);
  _exit(1);
}

/* One child's work: steps [from, to) starting from ckpt (or the seed),
 * ckpt-`to` written into dir; SIGKILL after writing when die. */
static void train(const char *dir, int resume, int64_t from, int64_t to, int die) {
  gf_err e = {0};
  gf_ctx ctx, hctx;
  gf_ctx_config cc = {use_cuda ? GF_BACKEND_CUDA : GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  gf_ctx_config hc = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  ok(gf_ctx_init(&ctx, &cc, &e), &e, "ctx");
  ctx.deterministic = 1;
  ok(gf_ctx_init(&hctx, &hc, &e), &e, "host ctx");
  gf_model_config c;
  model_config(&c);
  int batch = 16;
  gf_gan gan, host;
  ok(gf_gan_init(&gan, &ctx, &c, NULL, batch, &e), &e, "gan");
  ok(gf_gan_init(&host, &hctx, &c, NULL, 2, &e), &e, "host twin");
  if (resume) {
    char path[1024];
    gf_ckpt_meta meta;
    ok(gf_checkpoint_find_latest(dir, path, sizeof path, &meta, NULL, NULL, 0, &e), &e,
       "find");
    if (meta.step != from) {
      fprintf(stderr, "newest checkpoint is at step %lld, not %lld\n", (long long)meta.step,
              (long long)from);
      _exit(1);
    }
    ok(gf_checkpoint_load(path, &host, NULL, &e), &e, "load");
    ok(gf_gan_copy_state(&gan, &host, &e), &e, "host -> device");
  } else {
    ok(gf_gan_init_params(&gan, SEED, &e), &e, "init");
  }
  int64_t rs[4] = {batch, 1, 28, 28};
  gf_tensor real, dreal;
  ok(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &e), &e, "real");
  ok(gf_tensor_init(&dreal, GF_F32, ctx.device, 4, rs, &e), &e, "device real");
  for (int64_t k = from; k < to; k++) {
    fill_real(real.data, gf_tensor_numel(&real), k);
    ok(gf_tensor_copy(&dreal, &real, &e), &e, "batch -> device");
    ok(gf_gan_step(&gan, &ctx, &dreal, NULL, SEED, k, 0, NULL, &e), &e, "step");
  }
  ok(gf_gan_copy_state(&host, &gan, &e), &e, "device -> host");
  gf_ckpt_meta meta;
  memset(&meta, 0, sizeof meta);
  meta.format_version = GF_CKPT_FORMAT_VERSION;
  meta.step = to;
  meta.seed = SEED;
  meta.world_size = 1;
  meta.config = c;
  ok(gf_checkpoint_save(dir, &host, &meta, 0, NULL, 0, &e), &e, "save");
  if (die) raise(SIGKILL); /* no cleanup: a crash after the checkpoint */
  gf_tensor_free(&real);
  gf_tensor_free(&dreal);
  gf_gan_free(&gan);
  gf_gan_free(&host);
  gf_ctx_free(&ctx);
  gf_ctx_free(&hctx);
  _exit(0);
}

/* Runs fn-like work in a child; returns its exit code or 128 + signal. */
static int child(const char *dir, int resume, int64_t from, int64_t to, int die, int probe) {
  fflush(NULL);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (probe) {
      gf_err e = {0};
      gf_status st = use_cuda ? gf_cuda_device_check(0, &e) : GF_OK;
      if (st != GF_OK) printf("skipped: %s\n", e.msg);
      fflush(stdout); /* _exit flushes nothing: the skip gate reads the line */
      _exit(st == GF_OK ? 0 : 77);
    }
    train(dir, resume, from, to, die);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

int main(int argc, char **argv) {
  use_cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
  if (child(NULL, 0, 0, 0, 0, 1) == 77) return 77;
  snprintf(tmp, sizeof tmp, "%s/gf-resume-%s-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           use_cuda ? "cuda" : "cpu");
  REQUIRE(mkdtemp(tmp) != NULL);
  char da[600], db[600];
  snprintf(da, sizeof da, "%s/a", tmp);
  snprintf(db, sizeof db, "%s/b", tmp);
  REQUIRE(mkdir(da, 0755) == 0 && mkdir(db, 0755) == 0);

  CHECK_INT_EQ(child(da, 0, 0, N_STEPS, 0, 0), 0);
  CHECK_INT_EQ(child(db, 0, 0, K_STEPS, 1, 0), 128 + SIGKILL);
  CHECK_INT_EQ(child(db, 1, K_STEPS, N_STEPS, 0, 0), 0);

  char pa[700], pb[700];
  gf_err e = {0};
  gf_ckpt_meta ma, mb;
  REQUIRE(gf_checkpoint_find_latest(da, pa, sizeof pa, &ma, NULL, NULL, 0, &e) == GF_OK);
  REQUIRE(gf_checkpoint_find_latest(db, pb, sizeof pb, &mb, NULL, NULL, 0, &e) == GF_OK);
  CHECK_INT_EQ(ma.step, N_STEPS);
  CHECK_INT_EQ(mb.step, N_STEPS);
  size_t na = 0, nb = 0;
  unsigned char *a = tu_read(pa, &na), *b = tu_read(pb, &nb);
  CHECKF(na == nb && memcmp(a, b, na) == 0,
         "%s: resumed ckpt-%d differs from the uninterrupted run's (%zu vs %zu bytes)",
         use_cuda ? "cuda" : "cpu", N_STEPS, nb, na);
  free(a);
  free(b);
  /* clean up: two dirs of checkpoint files */
  char *dirs[2] = {da, db};
  for (int i = 0; i < 2; i++) {
    char cmd[800];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dirs[i]);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dirs[i]);
  }
  rmdir(tmp);
  return check_report();
}

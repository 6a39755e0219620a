/* test_data_loader.c - the loader thread: the batches it hands out (images,
 * labels, indices, steps) are those of the synchronous path (iterator +
 * gf_data_fill) for any start step, queue depth and rank; it shuts down
 * cleanly mid-epoch, with a full queue, or before the first batch (run
 * under the sanitizer build); bad arguments are refused; the data-wait
 * bookkeeping adds up.
 *
 * "A full queue": gf/data.h tells nothing of the queue's level, so the test
 * watches the loader's thread in /proc/self/task: asleep in a futex wait
 * (its condition variable) while nobody calls gf_data_loader_next, it has
 * filled every slot of its ring - the only wait of its loop, apart from
 * the stop it is not given until then (data_loader.c). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "check.h"
#include "gf/data.h"
#include "wait_util.h"

/* n images of 3x4x4 with pseudo-random bytes, labels i % 10. */
static void make_ds(gf_dataset *ds, uint32_t n) {
  memset(ds, 0, sizeof *ds);
  ds->c = 3;
  ds->h = ds->w = 4;
  ds->pixels = malloc((size_t)n * 48);
  ds->labels = malloc(n);
  REQUIRE(ds->pixels && ds->labels);
  uint32_t x = 12345;
  for (size_t i = 0; i < (size_t)n * 48; i++) {
    x = x * 1103515245u + 12345u;
    ds->pixels[i] = (uint8_t)(x >> 16);
  }
  for (uint32_t i = 0; i < n; i++) ds->labels[i] = (uint8_t)(i % 10);
  ds->n = n;
  ds->num_classes = 10;
}

/* Compares `steps` loader batches from first_step with the synchronous
 * path. */
static void compare(const gf_dataset *ds, gf_data_order ord, uint64_t first,
                    int depth, int steps) {
  gf_err err = {0};
  gf_data_loader *ld = NULL;
  REQUIRE(gf_data_loader_start(&ld, ds, &ord, first, depth, &err) == GF_OK);
  gf_data_iter it;
  REQUIRE(gf_data_iter_init(&it, ds, &ord, &err) == GF_OK);
  gf_data_iter_seek(&it, first);
  const size_t stride = (size_t)ds->c * ds->h * ds->w;
  uint32_t *idx = malloc(it.count * sizeof *idx);
  float *im = malloc(it.count * stride * sizeof *im);
  int32_t *lab = malloc(it.count * sizeof *lab);
  REQUIRE(idx && im && lab);
  double sum_wait = 0;
  int mismatches = 0;
  for (int s = 0; s < steps; s++) {
    const gf_batch *b = NULL;
    uint64_t step;
    CHECK(gf_data_loader_next(ld, &b, &err) == GF_OK);
    REQUIRE(b);
    CHECK(gf_data_iter_next_indices(&it, idx, &step, &err) == GF_OK);
    gf_data_fill(ds, idx, it.count, im, lab);
    mismatches += b->step != step || b->n != it.count || b->c != ds->c ||
                  memcmp(b->indices, idx, it.count * sizeof *idx) != 0 ||
                  memcmp(b->images, im, it.count * stride * sizeof *im) != 0 ||
                  memcmp(b->labels, lab, it.count * sizeof *lab) != 0;
    CHECK(b->wait_s >= 0);
    sum_wait += b->wait_s;
  }
  CHECK_INT_EQ(mismatches, 0);
  CHECK_NEAR(gf_data_loader_wait_seconds(ld), sum_wait, 1e-6);
  gf_data_loader_free(ld);
  gf_data_iter_free(&it);
  free(idx);
  free(im);
  free(lab);
}

static void test_same_batches(void) {
  gf_dataset ds;
  make_ds(&ds, 37);
  gf_data_order ord = {.seed = 11, .batch = 8, .world_size = 1, .rank = 0};
  compare(&ds, ord, 0, 2, 40);   /* several epochs, wrapping batches */
  compare(&ds, ord, 123, 4, 25); /* resumed at a later step */
  ord.world_size = 3;
  ord.rank = 2;
  compare(&ds, ord, 7, 3, 20);   /* one rank's slice */
  ord.batch = 100;               /* batches larger than the dataset */
  ord.world_size = 1;
  ord.rank = 0;
  compare(&ds, ord, 0, 8, 6);
  gf_dataset_free(&ds);
}

/* ---- the loader's thread, from /proc/self/task ------------------------- */

#define MAX_TIDS 64

/* This process's thread ids into tids (at most MAX_TIDS); their number. */
static int thread_ids(pid_t *tids) {
  DIR *d = opendir("/proc/self/task");
  REQUIRE(d != NULL);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < MAX_TIDS)
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
      tids[n++] = (pid_t)atoi(e->d_name);
  closedir(d);
  return n;
}

/* The one thread that is not among before[0..nbefore) (the loader's, when
 * called right after gf_data_loader_start). */
static pid_t new_thread(const pid_t *before, int nbefore) {
  pid_t now[MAX_TIDS];
  int n = thread_ids(now);
  pid_t found = 0;
  for (int i = 0; i < n; i++) {
    int old = 0;
    for (int j = 0; j < nbefore && !old; j++) old = now[i] == before[j];
    if (!old) {
      REQUIRE(found == 0); /* exactly one new thread */
      found = now[i];
    }
  }
  REQUIRE(found != 0);
  return found;
}

/* 1 when thread tid sleeps in a futex wait: state S in its stat, and, where
 * the kernel shows it, the futex system call in its syscall file. */
static int parked(void *arg) {
  pid_t tid = *(const pid_t *)arg;
  char path[96], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *paren = strrchr(buf, ')'); /* the name may hold spaces */
  if (!paren || paren[1] != ' ' || paren[2] != 'S') return 0;
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
  f = fopen(path, "r");
  if (!f) return 1; /* not shown here: the state alone */
  long nr = -1;
  int got = fscanf(f, "%ld", &nr);
  fclose(f);
  return got == 1 && nr == SYS_futex;
}

/* Waits until the loader started right after thread_ids(before) has
 * filled its ring (see the file's header); fails naming `what` when it
 * has not within 10 s (a few batches of 64 images take microseconds). */
static void wait_queue_full(const pid_t *before, int nbefore,
                            const char *what) {
  pid_t tid = new_thread(before, nbefore);
  CHECKF(tu_wait_for(parked, &tid, 10.0, 0.0005),
         "%s: the loader's thread (%d) never waited on a full queue within "
         "10 s",
         what, (int)tid);
}

static void test_shutdown(void) {
  gf_err err = {0};
  gf_dataset ds;
  make_ds(&ds, 500);
  gf_data_order ord = {.seed = 5, .batch = 64, .world_size = 1, .rank = 0};
  pid_t before[MAX_TIDS];
  /* Stopped before any batch is taken: at once (even k: wherever the
   * thread is) and with a full queue (odd k). */
  for (int k = 0; k < 20; k++) {
    gf_data_loader *ld = NULL;
    int nbefore = thread_ids(before);
    REQUIRE(gf_data_loader_start(&ld, &ds, &ord, (uint64_t)k, 2, &err) == GF_OK);
    if (k % 2) wait_queue_full(before, nbefore, "stopped before any batch");
    gf_data_loader_free(ld);
  }
  /* Stopped mid-epoch while holding a batch and with batches queued (the
   * ring full again behind the one held). */
  gf_data_loader *ld = NULL;
  int nbefore = thread_ids(before);
  REQUIRE(gf_data_loader_start(&ld, &ds, &ord, 3, 3, &err) == GF_OK);
  const gf_batch *b = NULL;
  for (int s = 0; s < 4; s++) {
    CHECK(gf_data_loader_next(ld, &b, &err) == GF_OK);
    CHECK(b && b->step == 3u + (uint64_t)s);
  }
  wait_queue_full(before, nbefore, "stopped mid-epoch");
  gf_data_loader_free(ld);
  gf_data_loader_free(NULL);
  gf_dataset_free(&ds);
}

static void test_bad_arguments(void) {
  gf_err err = {0};
  gf_dataset ds;
  make_ds(&ds, 10);
  gf_data_order ord = {.seed = 5, .batch = 4, .world_size = 1, .rank = 0};
  gf_data_loader *ld = (gf_data_loader *)&ds; /* must be reset to NULL */
  CHECK(gf_data_loader_start(&ld, &ds, &ord, 0, 1, &err) == GF_EINVAL);
  CHECK(ld == NULL);
  CHECK(gf_data_loader_start(&ld, &ds, &ord, 0, 9, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "depth") != NULL);
  ord.rank = 1;
  CHECK(gf_data_loader_start(&ld, &ds, &ord, 0, 2, &err) == GF_EINVAL);
  CHECK(ld == NULL);
  gf_dataset_free(&ds);
}

int main(void) {
  test_same_batches();
  test_shutdown();
  test_bad_arguments();
  return check_report();
}

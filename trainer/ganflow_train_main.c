/* ganflow_train_main.c - the ganflow-train executable: parses the command
 * line, routes SIGTERM/SIGINT to a stop flag and runs gf_train_run
 * (trainer/include/gf/train.h). The only place that decides the exit
 * status.
 *
 * Signals: SIGTERM and SIGINT are blocked in every thread (the mask is set
 * before any thread exists, so the loader, uploader, logger, monitor and
 * OpenMP threads inherit it) and taken synchronously by one thread in
 * sigwait(). No signal handler ever interrupts training code: with a
 * handler, a SIGTERM landing mid-step corrupted the heap inside oneDNN's
 * parallel GEMM about once in 15-40 runs on a loaded machine; taken in
 * sigwait(), never in 115 runs.
 * The signal thread sets the stop flag; the training loop reads it at every
 * step boundary, writes a checkpoint and ends the run KILLED. A second
 * SIGINT while that is under way exits at once with 130.
 *
 * Output: the library reports through the log sink below, the one place
 * that writes the run's lines to stderr. On a terminal the progress line is
 * redrawn in place (\r) and the next other line starts below it. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gf/comm.h"
#include "gf/heartbeat.h"
#include "gf/log.h"
#include "gf/train.h"

/* The stderr sink. Lines come from the training thread, the uploader and
 * the logger's threads: each is written under stderr's own lock, which also
 * guards `open`. */
typedef struct stderr_sink {
  bool open; /* a progress line was drawn and not ended with a newline */
} stderr_sink;

static void stderr_write(void *user, gf_log_level level, const char *line) {
  stderr_sink *s = user;
  flockfile(stderr);
  if (level == GF_LOG_PROGRESS && s) {
    /* Redrawn in place; the padding covers a longer line before it. */
    fprintf(stderr, "\r%s   ", line);
    s->open = true;
  } else {
    if (s && s->open) fputc('\n', stderr);
    if (s) s->open = false;
    fputs(line, stderr);
    fputc('\n', stderr);
  }
  fflush(stderr);
  funlockfile(stderr);
}

/* Ends a progress line still open, so the shell's prompt starts below. */
static void stderr_close(stderr_sink *s) {
  flockfile(stderr);
  if (s->open) fputc('\n', stderr);
  s->open = false;
  funlockfile(stderr);
}

typedef struct signal_watch {
  sigset_t set;     /* SIGTERM, SIGINT: blocked everywhere, taken here */
  atomic_int stop;  /* read by the training loop */
  sem_t running;    /* posted once the thread runs: main waits for it, so
                       a process that exits at once (a refused flag) never
                       exits while the thread is still being set up (the
                       sanitizers' thread start then reads as a leak) */
} signal_watch;

static void *signal_thread(void *arg) {
  signal_watch *w = arg;
  sem_post(&w->running);
  for (;;) {
    int sig = 0;
    if (sigwait(&w->set, &sig) != 0) continue;
    if (sig == SIGINT && atomic_load(&w->stop)) _exit(130);
    atomic_store(&w->stop, 1);
  }
  return NULL;
}

/* 64-bit FNV-1a of the params a run logs: equal on every rank when the
 * ranks were given the same flags. */
static uint64_t config_hash(const gf_train_config *cfg) {
  gf_train_param params[GF_TRAIN_MAX_PARAMS];
  size_t n = gf_train_config_params(cfg, params, GF_TRAIN_MAX_PARAMS);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    const char *parts[2] = {params[i].key, params[i].value};
    for (int j = 0; j < 2; j++)
      for (const char *p = parts[j]; ; p++) {
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
        if (!*p) break;
      }
  }
  return h;
}

/* The engine of CPU ranks: tcp when the launch gives MASTER_ADDR and
 * MASTER_PORT and is not mpirun (torchrun-style variables, `ganflow
 * launch`, srun with those set), else MPI. */
static gf_comm_backend cpu_backend(const gf_launch_info *launch) {
  if (strcmp(launch->launcher, "mpirun") != 0 && launch->master_addr[0] &&
      launch->master_port > 0)
    return GF_COMM_TCP;
  return GF_COMM_MPI;
}

/* Whether main makes the job's communicator: CPU ranks of a world > 1.
 * GPU ranks under torchrun-style variables get theirs (NCCL, bootstrapped
 * through MASTER_PORT) in gf_train_run, so main leaves the port to it;
 * under mpirun/srun main makes an MPI one for the start-up agreement. A
 * rank whose command line did not parse cannot know its device and joins
 * the agreement as a CPU rank would. */
static bool main_makes_comm(const gf_launch_info *launch,
                            const gf_train_config *cfg, bool parsed) {
  if (launch->world_size <= 1) return false;
  if (cpu_backend(launch) == GF_COMM_MPI) return true;
  return !parsed || strncmp(cfg->device, "cuda", 4) != 0;
}

/* Ranks' communicator (MPI or tcp), then agreement that every rank parsed
 * its command line and got the same one, so that a bad flag on one rank
 * fails every rank at once (exit 2) instead of hanging the others.
 * Returns the exit status (0 to go on); *comm owned by the caller. */
static int start_ranks(gf_comm **comm, const gf_launch_info *launch,
                       const gf_train_config *cfg, bool parsed, gf_err *err) {
  gf_comm_backend be = cpu_backend(launch);
  if (!gf_comm_built(be)) {
    gf_fail(err, GF_EUNSUPPORTED, "launched by %s as one of %d ranks, but "
            "this build has no MPI (install libopenmpi-dev and rebuild, or "
            "set MASTER_ADDR and MASTER_PORT for the tcp engine)",
            launch->launcher, launch->world_size);
    return GF_TRAIN_EXIT_FAIL;
  }
  gf_comm_config cc = {be, GF_ALLREDUCE_ENGINE, 60, NULL, launch};
  if (parsed) {
    cc.algo = cfg->exact_reduce ? GF_ALLREDUCE_TREE
                                : (gf_allreduce_algo)cfg->allreduce;
    cc.timeout_s = cfg->comm_timeout;
  }
  if (gf_comm_init(comm, &cc, err) != GF_OK) return GF_TRAIN_EXIT_FAIL;
  int world = gf_comm_world(*comm);
  /* {parsed, hash}: hash 0 for a rank that could not parse */
  uint64_t mine[2] = {parsed, 0};
  gf_train_config tmp;
  if (parsed) {
    tmp = *cfg;
    tmp.world_size = world;
    mine[1] = config_hash(&tmp);
  }
  uint64_t *all = calloc((size_t)world * 2, sizeof *all);
  if (!all) {
    gf_fail(err, GF_ENOMEM, "out of memory");
    return GF_TRAIN_EXIT_FAIL;
  }
  gf_err e;
  if (gf_comm_allgather(*comm, mine, sizeof mine, all, &e) != GF_OK) {
    free(all);
    *err = e;
    return GF_TRAIN_EXIT_FAIL;
  }
  int bad = -1, differ = -1;
  for (int r = 0; r < world; r++) {
    if (!all[2 * r] && bad < 0) bad = r;
    if (all[2 * r] && all[2 * r + 1] != all[1] && all[0] && differ < 0) differ = r;
  }
  free(all);
  if (!parsed) return GF_TRAIN_EXIT_USAGE; /* main prints the rank's own error */
  if (bad >= 0) {
    gf_fail(err, GF_EINVAL, "rank %d refused its command line (its message "
            "says why); stopping", bad);
    return GF_TRAIN_EXIT_USAGE;
  }
  if (differ >= 0) {
    gf_fail(err, GF_EINVAL, "rank %d was given other flags than rank 0: "
            "every rank must run the same command", differ);
    return GF_TRAIN_EXIT_USAGE;
  }
  return 0;
}

int main(int argc, char **argv) {
  /* Owned by the detached signal thread for the life of the process (it
   * may still be in sigwait() while exit() runs), so never freed. */
  signal_watch *watch = calloc(1, sizeof *watch);
  if (!watch) {
    fprintf(stderr, "ganflow-train: out of memory\n");
    return GF_TRAIN_EXIT_FAIL;
  }
  sigemptyset(&watch->set);
  sigaddset(&watch->set, SIGTERM);
  sigaddset(&watch->set, SIGINT);
  atomic_init(&watch->stop, 0);
  int prc = sem_init(&watch->running, 0, 0) == 0 ? 0 : errno;
  if (prc == 0) prc = pthread_sigmask(SIG_BLOCK, &watch->set, NULL);
  pthread_t tid;
  if (prc == 0) prc = pthread_create(&tid, NULL, signal_thread, watch);
  if (prc != 0) {
    fprintf(stderr, "ganflow-train: cannot start the signal thread: %s\n",
            strerror(prc));
    return GF_TRAIN_EXIT_FAIL;
  }
  pthread_detach(tid);
  while (sem_wait(&watch->running) != 0 && errno == EINTR) {
  }
  /* A closed stderr pipe (a log viewer gone) must not kill the run and
   * leave it RUNNING in MLflow: writes then fail with EPIPE instead. */
  signal(SIGPIPE, SIG_IGN);

  gf_train_config cfg;
  gf_err err;
  memset(&err, 0, sizeof err);
  const char *prog = argc > 0 && argv[0] ? argv[0] : "ganflow-train";
  const char *slash = strrchr(prog, '/');
  if (slash) prog = slash + 1;
  /* How the job was started: one process, mpirun/srun ranks, or
   * torchrun-style variables. */
  gf_launch_info launch;
  if (gf_launch_detect(&launch, gf_launch_getenv, NULL, &err) != GF_OK) {
    fprintf(stderr, "%s: %s\n", prog, err.msg);
    return GF_TRAIN_EXIT_USAGE;
  }
  gf_parse_result pr = gf_train_parse_args(&cfg, argc, argv, &err);
  if (pr == GF_PARSE_HELP) {
    if (launch.rank == 0) gf_train_usage(stdout, prog);
    return 0;
  }
  /* A supervisor (`ganflow launch`) watches the ranks through heartbeat
   * files in GANFLOW_HEARTBEAT_DIR. */
  gf_heartbeat hb;
  gf_heartbeat_none(&hb);
  const char *hb_dir = getenv("GANFLOW_HEARTBEAT_DIR");
  if (hb_dir && *hb_dir &&
      gf_heartbeat_open(&hb, hb_dir, launch.rank, &err) != GF_OK) {
    fprintf(stderr, "%s: %s\n", prog, err.msg);
    return GF_TRAIN_EXIT_FAIL;
  }
  gf_comm *comm = NULL;
  if (main_makes_comm(&launch, &cfg, pr == GF_PARSE_OK)) {
    int rc = start_ranks(&comm, &launch, &cfg, pr == GF_PARSE_OK, &err);
    if (rc != 0) {
      if (err.msg[0])
        fprintf(stderr, "%s: rank %d: %s\n", prog, launch.rank, err.msg);
      gf_comm_free(comm);
      return rc;
    }
  }
  if (pr == GF_PARSE_USAGE) {
    fprintf(stderr, "%s: %s\nTry '%s --help'.\n", prog, err.msg, prog);
    gf_comm_free(comm);
    return GF_TRAIN_EXIT_USAGE;
  }
  cfg.world_size = launch.world_size;
  stderr_sink sink = {false};
  bool tty = isatty(STDERR_FILENO) == 1;
  /* On a terminal progress lines are redrawn; elsewhere they are lines. */
  gf_log log = {stderr_write, tty ? &sink : NULL, tty};
  gf_train_exit rc = gf_train_run(&cfg, &launch, comm, &watch->stop, &hb, &log);
  stderr_close(&sink);
  /* A rank that failed takes the job down at once rather than leave the
   * others waiting out their timeout in a collective. */
  if (rc == GF_TRAIN_EXIT_FAIL && comm) gf_comm_abort(comm, (int)rc);
  gf_comm_free(comm);
  gf_heartbeat_close(&hb);
  return (int)rc;
}

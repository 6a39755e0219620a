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
 * SIGINT while that is under way exits at once with 130. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gf/train.h"

typedef struct signal_watch {
  sigset_t set;     /* SIGTERM, SIGINT: blocked everywhere, taken here */
  atomic_int stop;  /* read by the training loop */
} signal_watch;

static void *signal_thread(void *arg) {
  signal_watch *w = arg;
  for (;;) {
    int sig = 0;
    if (sigwait(&w->set, &sig) != 0) continue;
    if (sig == SIGINT && atomic_load(&w->stop)) _exit(130);
    atomic_store(&w->stop, 1);
  }
  return NULL;
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
  int prc = pthread_sigmask(SIG_BLOCK, &watch->set, NULL);
  pthread_t tid;
  if (prc == 0) prc = pthread_create(&tid, NULL, signal_thread, watch);
  if (prc != 0) {
    fprintf(stderr, "ganflow-train: cannot start the signal thread: %s\n",
            strerror(prc));
    return GF_TRAIN_EXIT_FAIL;
  }
  pthread_detach(tid);
  /* A closed stderr pipe (a log viewer gone) must not kill the run and
   * leave it RUNNING in MLflow: writes then fail with EPIPE instead. */
  signal(SIGPIPE, SIG_IGN);

  gf_train_config cfg;
  gf_err err;
  memset(&err, 0, sizeof err);
  const char *prog = argc > 0 && argv[0] ? argv[0] : "ganflow-train";
  const char *slash = strrchr(prog, '/');
  if (slash) prog = slash + 1;
  switch (gf_train_parse_args(&cfg, argc, argv, &err)) {
  case GF_PARSE_HELP:
    gf_train_usage(stdout, prog);
    return 0;
  case GF_PARSE_USAGE:
    fprintf(stderr, "%s: %s\nTry '%s --help'.\n", prog, err.msg, prog);
    return GF_TRAIN_EXIT_USAGE;
  case GF_PARSE_OK:
    break;
  }
  return (int)gf_train_run(&cfg, &watch->stop);
}

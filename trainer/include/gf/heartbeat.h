/* heartbeat.h - how a ganflow-train rank tells its supervisor (`ganflow
 * launch`, DESIGN §4.6) that it is alive and where it is: one small file per
 * rank, rewritten in place at every step and at every change of phase.
 *
 * The file is <dir>/rank-<R>.hb, one line padded to GF_HB_LINE bytes and
 * written with a single pwrite at offset 0:
 *   ganflow-heartbeat 1 rank=R pid=P seq=N step=S phase=PHASE host=H run=ID
 * seq grows by one at each beat, so the reader needs no clock of the
 * writer: it notes, on its own monotonic clock, when seq last changed. A
 * rank that stops beating (SIGSTOP, a deadlocked collective, a write
 * blocked on a full disk) is then seen as stale. step is the number of
 * optimizer steps completed (-1 before the run's start is known); run is
 * the MLflow run id once rank 0 knows it ("-" before, and on other ranks);
 * host the rank's host name (so that a supervisor signals a pid only on
 * the host it belongs to).
 *
 * Not here: what a supervisor does with a stale rank (launch/src/launch*.c). */
#ifndef GF_HEARTBEAT_H
#define GF_HEARTBEAT_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"

#define GF_HB_LINE 320  /* bytes of a heartbeat file */
#define GF_HB_RUN_MAX 64 /* run id characters kept */
#define GF_HB_HOST_MAX 64 /* host name characters kept */

/* Where a rank is. The supervisor allows --hang-timeout between beats in
 * TRAIN and CHECKPOINT (steps and checkpoint writes are short and
 * regular), and its longer --start-timeout in the others (start-up, an
 * evaluation, the final upload). */
typedef enum gf_hb_phase {
  GF_HB_START = 0,  /* the process runs; nothing set up yet */
  GF_HB_SETUP,      /* data, model, MLflow run, communicator */
  GF_HB_TRAIN,      /* between optimizer steps */
  GF_HB_CHECKPOINT, /* writing a checkpoint (or waiting for rank 0 to) */
  GF_HB_EVAL,       /* rank 0: SWD evaluation */
  GF_HB_FINISH,     /* after the last step: final checkpoint, model upload */
  GF_HB_DONE,       /* rank 0: training finished, model logged */
  GF_HB_STOPPED,    /* rank 0: stopped by a signal, checkpoint written (run
                       KILLED) */
  GF_HB_N_PHASES
} gf_hb_phase;

/* Name of a phase ("train"); "?" for an unknown value. */
const char *gf_hb_phase_name(gf_hb_phase p);

/* The writer, one per rank; caller-owned struct, opened by
 * gf_heartbeat_open and closed by gf_heartbeat_close. A zeroed struct with
 * fd -1 (gf_heartbeat_none) beats nowhere. */
typedef struct gf_heartbeat {
  int fd;           /* the rank's file; -1: no supervisor asked for beats */
  int rank;         /* world rank written in the line */
  uint64_t seq;     /* beats written so far */
  char run[GF_HB_RUN_MAX + 1]; /* "-" until gf_heartbeat_set_run */
  char host[GF_HB_HOST_MAX + 1]; /* gethostname(), sanitized */
} gf_heartbeat;

/* A writer that writes nothing. */
void gf_heartbeat_none(gf_heartbeat *hb);
/* Creates (truncates) <dir>/rank-<rank>.hb and writes a first beat (START,
 * step -1). GF_EIO naming the path when it cannot; GF_EINVAL when the path
 * does not fit in GF_PATH_MAX bytes. */
gf_status gf_heartbeat_open(gf_heartbeat *hb, const char *dir, int rank,
                            gf_err *err);
/* Records the MLflow run id written in later beats (copied; truncated to
 * GF_HB_RUN_MAX; characters outside [A-Za-z0-9_-] become '_'). */
void gf_heartbeat_set_run(gf_heartbeat *hb, const char *run_id);
/* One beat. Best effort: a failed write is ignored (the supervisor then
 * sees the rank as stale, which is the truth it needs). NULL or fd -1: a
 * no-op. Called from one thread. */
void gf_heartbeat_beat(gf_heartbeat *hb, gf_hb_phase phase, int64_t step);
/* Closes the file (it stays, holding the last beat); NULL fine. */
void gf_heartbeat_close(gf_heartbeat *hb);

/* ---- reading (the supervisor) ------------------------------------------ */
typedef struct gf_heartbeat_rec {
  int rank;
  long pid;
  uint64_t seq;
  int64_t step;
  gf_hb_phase phase;
  char host[GF_HB_HOST_MAX + 1];
  char run[GF_HB_RUN_MAX + 1]; /* "" when the line says "-" */
} gf_heartbeat_rec;

/* Parses the n bytes of a heartbeat file (outside input: every field is
 * checked; trailing padding allowed). GF_EFORMAT with the reason for
 * anything else, including a line caught half-written. No allocation. */
gf_status gf_heartbeat_parse(const char *buf, size_t n, gf_heartbeat_rec *out,
                             gf_err *err);
/* Reads and parses <dir>/rank-<rank>.hb. GF_ENOTFOUND when it does not
 * exist yet; GF_EINVAL when its path does not fit in GF_PATH_MAX bytes. */
gf_status gf_heartbeat_read(const char *dir, int rank, gf_heartbeat_rec *out,
                            gf_err *err);

#endif

/* launch_proc.c - the processes of a supervised attempt: spawning the ranks
 * (local) or the launcher (mpirun, srun) with their environment, signals,
 * reaping, the attempt's state (PLANNED, RUNNING, ENDED) and its checker,
 * and small host facts (a free port, a host file's slots). */
#define _GNU_SOURCE
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gf/clock.h"
#include "gf/fs.h"
#include "gf/invariant.h"
#include "gf/parse.h"
#include "gf/sock.h"
#include "gf/strbuf.h"
#include "gf/text.h"
#include "launch_internal.h"

#define SCANCEL_WAIT_S 5.0 /* longest wait for scancel --signal=TERM */

/* ---- the attempt's state -------------------------------------------------- */

#if defined(GF_STATE_CHECKS)
/* A wait status waitpid can hand back without WUNTRACED. */
static bool wait_status_ok(int st) { return WIFEXITED(st) || WIFSIGNALED(st); }

int launch_attempt_state_ok(const launch_attempt *a) {
  if (a->world < 1 || a->world > GF_LAUNCH_MAX_RANKS || a->rank_base < 0 ||
      a->global_world > GF_LAUNCH_MAX_RANKS ||
      a->rank_base + a->world > a->global_world || a->grad_accum < 1 ||
      a->restarts < 0 || !a->hb_dir || !a->master[0] ||
      !memchr(a->master, '\0', sizeof a->master) || a->port < 1 ||
      a->port > 65535)
    return 0;
  bool slot_used[GF_LAUNCH_MAX_RANKS] = {false};
  int pids = 0, live = 0;
  for (int i = 0; i < GF_LAUNCH_MAX_RANKS; i++) {
    const launch_rank *r = &a->r[i];
    if (i >= a->world) { /* no rank there */
      if (r->pid != 0 || r->exited || r->status != 0) return 0;
      continue;
    }
    if (r->slot < 0 || r->slot >= GF_LAUNCH_MAX_RANKS || slot_used[r->slot])
      return 0;
    slot_used[r->slot] = true;
    if (r->pid < 0 ||
        (r->exited && (r->pid == 0 || !wait_status_ok(r->status))) ||
        (!r->exited && r->status != 0))
      return 0;
    pids += r->pid > 0;
    live += r->pid > 0 && !r->exited;
  }
  if (a->launcher_pid < 0 ||
      (a->launcher_exited &&
       (a->launcher_pid == 0 || !wait_status_ok(a->launcher_status))) ||
      (!a->launcher_exited && a->launcher_status != 0))
    return 0;
  switch (a->state) {
  case ATTEMPT_PLANNED:
    return pids == 0 && a->launcher_pid == 0 && a->pgid == 0;
  case ATTEMPT_RUNNING:
    if (a->pgid <= 0 || a->t_start <= 0) return 0;
    if (a->local) return a->launcher_pid == 0 && pids == a->world && live > 0;
    return pids == 0 && a->launcher_pid > 0 && a->pgid == a->launcher_pid &&
           !a->launcher_exited;
  case ATTEMPT_ENDED:
    if (a->pgid <= 0 || a->t_start <= 0) return 0;
    if (a->local) return a->launcher_pid == 0 && pids > 0 && live == 0;
    return pids == 0 && a->launcher_pid > 0 && a->launcher_exited;
  }
  return 0;
}
#endif

/* RUNNING -> ENDED once every process started has been reaped. */
static void note_ended(launch_attempt *a) {
  if (a->state != ATTEMPT_RUNNING) return;
  bool live = a->launcher_pid > 0 && !a->launcher_exited;
  for (int i = 0; i < a->world; i++) live |= a->r[i].pid > 0 && !a->r[i].exited;
  if (!live) a->state = ATTEMPT_ENDED;
}

gf_status launch_free_port(int *port, gf_err *err) {
  int fd = -1;
  gf_err e;
  if (gf_sock_listen(NULL, 0, &fd, port, &e) != GF_OK)
    return gf_fail(err, GF_EIO, "no free TCP port: %s", e.msg);
  close(fd);
  return GF_OK;
}

gf_status launch_prepare_hb_dir(const char *dir, gf_err *err) {
  GF_TRY(gf_mkdir_p(dir, 0755, err));
  DIR *d = opendir(dir);
  if (!d) return gf_fail(err, GF_EIO, "%s: %s", dir, strerror(errno));
  struct dirent *e;
  gf_status st = GF_OK;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (strncmp(e->d_name, "rank-", 5) != 0 || n < 4 ||
        strcmp(e->d_name + n - 3, ".hb") != 0)
      continue;
    char p[GF_PATH_MAX];
    if ((st = gf_path_join(p, sizeof p, dir, e->d_name, err)) != GF_OK) break;
    if (unlink(p) != 0 && errno != ENOENT) {
      st = gf_fail(err, GF_EIO, "cannot remove %s: %s", p, strerror(errno));
      break;
    }
  }
  closedir(d);
  return st;
}

static void set_int_env(const char *name, int v) {
  char b[16]; /* an int in decimal: 11 characters at most */
  GF_FORMAT_FITS(b, sizeof b, "%d", v);
  setenv(name, b, 1);
}

/* CUDA_VISIBLE_DEVICES for the attempt's slots when the ranks train on
 * GPUs: the slot's entry of the caller's list (whole, however long), or
 * its index. false when it could not be set (out of memory). */
static bool set_visible_devices(const gf_launch_opts *o,
                                const launch_attempt *a) {
  if (strncmp(o->train.device, "cuda", 4) != 0) return true;
  const char *have = getenv("CUDA_VISIBLE_DEVICES");
  gf_strbuf list;
  gf_strbuf_init(&list);
  for (int i = 0; i < a->world; i++) {
    if (i) gf_strbuf_puts(&list, ",");
    const char *p = NULL;
    if (have && *have) { /* the slot-th comma-separated entry */
      p = have;
      for (int k = 0; k < a->r[i].slot && p; k++) {
        p = strchr(p, ',');
        if (p) p++;
      }
    }
    if (p) gf_strbuf_append(&list, p, strcspn(p, ","));
    else gf_strbuf_printf(&list, "%d", a->r[i].slot);
  }
  char *text = gf_strbuf_take(&list, NULL);
  bool ok = text && setenv("CUDA_VISIBLE_DEVICES", text, 1) == 0;
  free(text);
  return ok;
}

/* In a child: the environment and process state every started process
 * gets, before exec. */
static void child_common(pid_t pgid, const launch_attempt *a, int restarts) {
  setpgid(0, pgid);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  setenv("GANFLOW_HEARTBEAT_DIR", a->hb_dir, 1);
  set_int_env("GANFLOW_RESTART", restarts);
}

static pid_t spawn_one(pid_t pgid, char **argv, const gf_launch_opts *o,
                       const launch_attempt *a, int rank, int restarts,
                       gf_err *err) {
  pid_t pid = fork();
  if (pid < 0) {
    gf_fail(err, GF_EIO, "fork: %s", strerror(errno));
    return -1;
  }
  if (pid > 0) {
    setpgid(pid, pgid ? pgid : pid); /* both sides: no race */
    return pid;
  }
  child_common(pgid, a, restarts);
  if (o->launcher == GF_LAUNCHER_LOCAL) {
    /* the ranks' launch is ours, not an outer mpirun's or srun's */
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("PMIX_RANK");
    unsetenv("SLURM_PROCID");
    set_int_env("RANK", a->rank_base + rank);
    set_int_env("WORLD_SIZE", a->global_world);
    set_int_env("LOCAL_RANK", rank);
    set_int_env("LOCAL_WORLD_SIZE", a->world);
    set_int_env("GANFLOW_SLOT", a->r[rank].slot);
    if (!set_visible_devices(o, a)) {
      fprintf(stderr, "ganflow launch: cannot set CUDA_VISIBLE_DEVICES: %s\n",
              strerror(errno));
      _exit(127);
    }
  }
  setenv("MASTER_ADDR", a->master, 1);
  set_int_env("MASTER_PORT", a->port);
  execvp(argv[0], argv);
  fprintf(stderr, "ganflow launch: cannot run %s: %s\n", argv[0],
          strerror(errno));
  _exit(127);
}

/* The launcher's command: mpirun/srun, its arguments, then the rank's. */
static char **launcher_argv(const gf_launch_opts *o, const launch_attempt *a,
                            char **argv, gf_err *err) {
  int n = 0;
  while (argv[n]) n++;
  char **out = calloc((size_t)n + 16 + GF_LAUNCH_MAX_LARGS, sizeof *out);
  if (!out) {
    gf_fail(err, GF_ENOMEM, "out of memory");
    return NULL;
  }
  int k = 0;
  /* mpirun's -np value or srun's --ntasks=, the one string of out that
   * it owns (launch_spawn frees it): a literal and an int, 32 bytes hold
   * them. */
  char num[32];
  GF_FORMAT_FITS(num, sizeof num, "%s%d",
                 o->launcher == GF_LAUNCHER_MPIRUN ? "" : "--ntasks=",
                 a->world);
  char *own = strdup(num);
  if (!own) {
    free(out);
    gf_fail(err, GF_ENOMEM, "out of memory");
    return NULL;
  }
  if (o->launcher == GF_LAUNCHER_MPIRUN) {
    out[k++] = "mpirun";
    out[k++] = "-np";
    out[k++] = own;
    if (a->hostfile || o->hostfile[0]) {
      out[k++] = "--hostfile";
      out[k++] = (char *)(a->hostfile ? a->hostfile : o->hostfile);
    }
    /* the supervisor's variables reach every rank, on every host */
    out[k++] = "-x";
    out[k++] = "GANFLOW_HEARTBEAT_DIR";
    out[k++] = "-x";
    out[k++] = "GANFLOW_RESTART";
  } else {
    out[k++] = "srun";
    out[k++] = own;
    out[k++] = "--kill-on-bad-exit=1";
  }
  for (int i = 0; i < o->n_largs; i++) out[k++] = (char *)o->largs[i];
  for (int i = 0; i < n; i++) out[k++] = argv[i];
  return out;
}

gf_status launch_spawn(const gf_launch_opts *o, launch_attempt *a,
                       char **argv, int restarts, gf_err *err) {
  a->restarts = restarts;
  GF_ASSERT_STATE(a->state == ATTEMPT_PLANNED && launch_attempt_state_ok(a));
  a->t_start = gf_mono_s();
  a->pgid = 0;
  a->local = o->launcher == GF_LAUNCHER_LOCAL;
  for (int i = 0; i < a->world; i++) a->r[i].t_change = a->t_start;
  if (o->launcher == GF_LAUNCHER_LOCAL) {
    for (int i = 0; i < a->world; i++) {
      pid_t pid = spawn_one(a->pgid, argv, o, a, i, restarts, err);
      if (pid < 0) {
        if (a->pgid) a->state = ATTEMPT_RUNNING; /* the ranks started */
        launch_kill_all(a);
        return GF_EIO;
      }
      a->r[i].pid = pid;
      if (!a->pgid) a->pgid = pid;
    }
    a->state = ATTEMPT_RUNNING;
    GF_ASSERT_STATE(launch_attempt_state_ok(a));
    return GF_OK;
  }
  char **largv = launcher_argv(o, a, argv, err);
  if (!largv) return GF_ENOMEM;
  /* mpirun -x and srun's default export take these from our environment */
  setenv("GANFLOW_HEARTBEAT_DIR", a->hb_dir, 1);
  set_int_env("GANFLOW_RESTART", restarts);
  pid_t pid = spawn_one(0, largv, o, a, 0, restarts, err);
  /* strings made by launcher_argv: the -np value and --ntasks= */
  free(o->launcher == GF_LAUNCHER_MPIRUN ? largv[2] : largv[1]);
  free(largv);
  if (pid < 0) return GF_EIO;
  a->launcher_pid = pid;
  a->pgid = pid;
  a->state = ATTEMPT_RUNNING;
  GF_ASSERT_STATE(launch_attempt_state_ok(a));
  return GF_OK;
}

void launch_reap(launch_attempt *a) {
  for (int i = 0; i < a->world; i++) {
    launch_rank *r = &a->r[i];
    if (r->pid <= 0 || r->exited) continue;
    int st = 0;
    if (waitpid(r->pid, &st, WNOHANG) == r->pid) {
      r->exited = true;
      r->status = st;
    }
  }
  if (a->launcher_pid > 0 && !a->launcher_exited) {
    int st = 0;
    if (waitpid(a->launcher_pid, &st, WNOHANG) == a->launcher_pid) {
      a->launcher_exited = true;
      a->launcher_status = st;
    }
  }
  note_ended(a);
  GF_ASSERT_STATE(launch_attempt_state_ok(a));
}

/* Whether pid runs ganflow-train (its heartbeat may be older than the
 * pid's reuse). */
static bool pid_is_trainer(long pid) {
  char p[64], comm[64] = ""; /* "/proc/" + a long (20 characters) + "/comm" */
  GF_FORMAT_FITS(p, sizeof p, "/proc/%ld/comm", pid);
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, comm, sizeof comm - 1);
  close(fd);
  return n > 0 && strncmp(comm, "ganflow-train", 13) == 0;
}

static int signal_local_ranks(launch_attempt *a, int sig);

void launch_signal(launch_attempt *a, int sig) {
  if (a->pgid > 0) killpg(a->pgid, sig);
  for (int i = 0; i < a->world; i++) {
    launch_rank *r = &a->r[i];
    if (r->pid > 0 && !r->exited) kill(r->pid, sig);
  }
  if (a->launcher_pid > 0 && !a->launcher_exited) kill(a->launcher_pid, sig);
  /* Ranks a launcher started may sit in their own process groups; their
   * heartbeats name them, and the host they run on (a pid from another
   * host must not be signalled here: the launcher ends those). */
  if (a->launcher_pid > 0 && sig == SIGKILL) signal_local_ranks(a, sig);
}

/* The pids of the attempt's ranks that run ganflow-train on this host, by
 * their heartbeats; sig to each. Returns how many. */
static int signal_local_ranks(launch_attempt *a, int sig) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  int n = 0;
  for (int i = 0; i < a->world; i++) {
    const launch_rank *r = &a->r[i];
    if (r->have_hb && r->hb.pid > 1 &&
        strncmp(r->hb.host, host, GF_HB_HOST_MAX) == 0 &&
        pid_is_trainer(r->hb.pid) && kill((pid_t)r->hb.pid, sig) == 0)
      n++;
  }
  return n;
}

void launch_signal_stop(const gf_launch_opts *o, launch_attempt *a) {
  if (o->launcher == GF_LAUNCHER_LOCAL) {
    launch_signal(a, SIGTERM);
    return;
  }
  if (o->launcher == GF_LAUNCHER_MPIRUN) {
    if (signal_local_ranks(a, SIGTERM) == 0) launch_signal(a, SIGTERM);
    return;
  }
  const char *job = getenv("SLURM_JOB_ID");
  pid_t pid = job ? fork() : -1;
  if (pid == 0) {
    int fd = open("/dev/null", O_RDONLY);
    if (fd >= 0) dup2(fd, 0);
    execlp("scancel", "scancel", "--signal=TERM", job, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  if (pid > 0) {
    /* scancel retries while Slurm will not alter the job (a requeue in
     * progress: "Job can not be altered now"): at most SCANCEL_WAIT_S */
    double end = gf_mono_s() + SCANCEL_WAIT_S;
    pid_t w;
    while ((w = waitpid(pid, &st, WNOHANG)) == 0 && gf_mono_s() < end) {
      struct timespec t10 = {0, 10 * 1000 * 1000};
      nanosleep(&t10, NULL);
    }
    if (w == 0) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      st = 1 << 8; /* as a failure */
    }
  }
  if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    signal_local_ranks(a, SIGTERM); /* no scancel: the ranks here at least */
}

void launch_kill_all(launch_attempt *a) {
  launch_signal(a, SIGKILL);
  for (int i = 0; i < a->world; i++) {
    launch_rank *r = &a->r[i];
    if (r->pid > 0 && !r->exited) {
      int st = 0;
      while (waitpid(r->pid, &st, 0) < 0 && errno == EINTR) {
      }
      r->exited = true;
      r->status = st;
    }
  }
  if (a->launcher_pid > 0 && !a->launcher_exited) {
    int st = 0;
    while (waitpid(a->launcher_pid, &st, 0) < 0 && errno == EINTR) {
    }
    a->launcher_exited = true;
    a->launcher_status = st;
  }
  note_ended(a);
  GF_ASSERT_STATE(a->state != ATTEMPT_RUNNING && launch_attempt_state_ok(a));
}

gf_status launch_hostfile_slots(const char *path, int *slots, gf_err *err) {
  FILE *f = fopen(path, "r");
  if (!f) return gf_fail(err, GF_EIO, "--hostfile %s: %s", path, strerror(errno));
  char line[1024];
  int total = 0, lineno = 0;
  gf_status st = GF_OK;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char *h = strchr(line, '#');
    if (h) *h = '\0';
    char *tok = strtok(line, " \t\r\n");
    if (!tok) continue;
    int n = 1;
    while ((tok = strtok(NULL, " \t\r\n")) != NULL) {
      if (strncmp(tok, "slots=", 6) == 0) {
        if (gf_parse_int(NULL, tok + 6, 0, GF_LAUNCH_MAX_RANKS, &n, NULL) !=
            GF_OK) {
          st = gf_fail(err, GF_EFORMAT, "--hostfile %s:%d: bad %s", path,
                       lineno, tok);
          break;
        }
      }
    }
    if (st != GF_OK) break;
    total += n;
    if (total > GF_LAUNCH_MAX_RANKS) total = GF_LAUNCH_MAX_RANKS;
  }
  fclose(f);
  if (st == GF_OK) *slots = total;
  return st;
}

void launch_describe_status(int status, char *out, size_t cap) {
  /* literals and ints: LAUNCH_STATUS_MIN bytes hold them */
  assert(cap >= LAUNCH_STATUS_MIN);
  if (WIFEXITED(status)) {
    GF_FORMAT_FITS(out, cap, "exited with status %d", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    int n = snprintf(out, cap, "was killed by signal %d (%s)",
                     WTERMSIG(status), strsignal(WTERMSIG(status)));
    if (!gf_fits(n, cap)) /* the C library's name does not fit: the number */
      GF_FORMAT_FITS(out, cap, "was killed by signal %d", WTERMSIG(status));
  } else {
    GF_FORMAT_FITS(out, cap, "ended (wait status %#x)", (unsigned)status);
  }
}

/* The state letter of /proc/<pid>/stat ('R', 'S', 'T', 'Z', ...); '\0'
 * when the process or the file is not there. */
static char proc_state(long pid) {
  char p[64], buf[512]; /* "/proc/" + a long (20 characters) + "/stat" */
  GF_FORMAT_FITS(p, sizeof p, "/proc/%ld/stat", pid);
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return '\0';
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return '\0';
  buf[n] = '\0';
  const char *rp = strrchr(buf, ')'); /* the name may hold spaces */
  return rp && rp[1] == ' ' ? rp[2] : '\0';
}

int launch_find_vanished(const launch_attempt *a) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  for (int i = 0; i < a->world; i++) {
    const launch_rank *r = &a->r[i];
    if (!r->have_hb || r->hb.pid <= 1 || r->hb.phase >= GF_HB_FINISH ||
        strncmp(r->hb.host, host, GF_HB_HOST_MAX) != 0)
      continue;
    if (kill((pid_t)r->hb.pid, 0) != 0 && errno == ESRCH) return i;
    /* a zombie (waiting for mpirun to reap it) is gone too */
    if (proc_state(r->hb.pid) == 'Z') return i;
  }
  return -1;
}

bool launch_pid_stopped(pid_t pid) {
  char st = proc_state((long)pid);
  return st == 'T' || st == 't';
}

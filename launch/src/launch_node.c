/* launch_node.c - `ganflow launch --nnodes`: one agent per node, as
 * torchrun runs them. Each agent starts and watches its node's --nproc
 * ranks; node 0's agent also hosts the rendezvous (the controller below),
 * which decides every round: which nodes take part, the world size, the
 * ranks' numbers, MASTER_PORT, and when a round ends.
 *
 * The wire (launch_rdzv.c), one line per message; agent -> controller:
 *   HELLO <node> <nproc> <host>     on every (re)connection
 *   BEAT                            every BEAT_S
 *   FAIL <round> start|train <cause>  a rank here died or hung (ranks
 *                                   killed); start: before training began,
 *                                   so the next round leaves this node out
 *   IDLE <round>                    this node's ranks of round are gone
 *                                   (after STOP or DRAIN)
 *   ENDED <round> done|stopped|ok   every rank here exited 0 (done/stopped:
 *                                   rank 0's last beat; ok: no rank 0 here)
 *   ENDED <round> usage             a rank here refused its configuration
 *                                   (exit 2): no restart can help
 * controller -> agent:
 *   GO <round> <world> <first rank> <grad-accum> <master port> <resume>
 *   WAIT <round>                    not in this round (a spare node)
 *   STOP <round> <cause>            kill the ranks (another node failed)
 *   DRAIN <round>                   SIGTERM the ranks: they checkpoint and
 *                                   stop (a node joins; the world grows)
 *   EXIT <code> <why>               the job is over
 *   PING                            every BEAT_S
 *
 * Failures between nodes: a rank that dies or hangs is seen by its own
 * agent (exit status, heartbeats), which reports FAIL; a node whose agent
 * is killed closes its connection (seen at once); a node whose link is cut
 * or whose processes are stopped goes silent, and the controller counts it
 * lost after --hang-timeout without a line. Every other member is then told
 * STOP, and the next round starts on the nodes still there (down to MIN),
 * from the newest checkpoint, into the same MLflow run. An agent that hears
 * nothing from node 0 for --hang-timeout kills its ranks and dials again
 * until --start-timeout; when it is back, the controller drains the running
 * round (a checkpoint) and starts a larger one.
 *
 * Only node 0 talks to MLflow (the restarts, as the one-node supervisor
 * does); heartbeats are read by each node's own agent, from
 * <heartbeat-dir>/node-<K>. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gf/clock.h"
#include "gf/fs.h"
#include "gf/invariant.h"
#include "gf/text.h"
#include "launch_internal.h"

#define POLL_S 0.05
#define BEAT_S 0.5
#define MAX_CONNS (2 * GF_LAUNCH_MAX_NODES)

/* ---- the controller (node 0) -------------------------------------------- */

typedef struct ctl_node {
  rdzv_conn c;     /* c.fd -1: a free entry */
  int node;        /* its node rank after HELLO; -1 before */
  char host[64];
  double t_join;   /* when its HELLO came */
  bool member;     /* in the current round */
  bool reported;   /* member: FAIL, IDLE or ENDED seen for this round */
  bool down;       /* its ranks failed before training: left out of the
                      rounds until a restart with another cause */
  int ended;       /* member: 0 none, else its RDZV_END_* */
} ctl_node;

typedef enum ctl_phase { CTL_GATHER, CTL_RUN, CTL_STOPPING, CTL_OVER } ctl_phase;

typedef struct ctl {
  int lfd;
  ctl_node n[MAX_CONNS];
  ctl_phase phase;
  int round;
  double t_change;    /* when the set of nodes there last changed */
  double t_gather;    /* when GATHER began */
  double t_stop;      /* when STOP or DRAIN went out */
  double t_ping;
  bool growth;        /* STOPPING to let a node in, not for a failure */
  int failures;       /* restarts for a failure (--max-restarts) */
  int world, nodes;   /* of the current (or last) round */
  char cause[512];    /* of the failure that ended the last round */
  bool start_fail;    /* that failure was a node's ranks failing to start */
  int exit_code;      /* CTL_OVER */
  char exit_why[640];
} ctl;

/* The nodes a round may use: connected, introduced, not left out. */
static int ctl_present(const ctl *c) {
  int k = 0;
  for (int i = 0; i < MAX_CONNS; i++)
    k += c->n[i].c.fd >= 0 && c->n[i].node >= 0 && !c->n[i].down;
  return k;
}

static void ctl_over(launch_sup *s, ctl *c, int code, const char *why) {
  c->phase = CTL_OVER;
  c->exit_code = code;
  if (gf_format(c->exit_why, sizeof c->exit_why, NULL, "reason", "%s", why) !=
      GF_OK)
    c->exit_why[0] = '\0';
  for (int i = 0; i < MAX_CONNS; i++)
    if (c->n[i].c.fd >= 0) rdzv_send(&c->n[i].c, "EXIT %d %s", code, why);
  (void)s;
}

/* Ends the round: STOP (kill) or DRAIN (checkpoint and stop) to every
 * member that has not reported. */
static void ctl_stop_round(launch_sup *s, ctl *c, bool drain, const char *why,
                           double now) {
  c->phase = CTL_STOPPING;
  c->t_stop = now;
  c->growth = drain;
  for (int i = 0; i < MAX_CONNS; i++) {
    ctl_node *n = &c->n[i];
    if (n->c.fd < 0 || !n->member || n->reported) continue;
    if (drain) rdzv_send(&n->c, "DRAIN %d", c->round);
    else rdzv_send(&n->c, "STOP %d %s", c->round, why);
  }
  launch_say(s, "round %d ends: %s", c->round, why);
}

static void ctl_fail(launch_sup *s, ctl *c, const char *cause, double now) {
  if (c->phase != CTL_RUN) return;
  if (gf_format(c->cause, sizeof c->cause, NULL, "cause", "%s", cause) != GF_OK)
    c->cause[0] = '\0';
  s->t_fail = now;
  ctl_stop_round(s, c, false, cause, now);
}

static void ctl_drop(launch_sup *s, ctl *c, ctl_node *n, const char *why,
                     double now) {
  if (n->node >= 0) {
    char cause[400];
    if (gf_format(cause, sizeof cause, NULL, "cause", "node %d (%s) lost: %s",
                  n->node, n->host, why) != GF_OK)
      cause[0] = '\0';
    if (n->member && c->phase == CTL_RUN) ctl_fail(s, c, cause, now);
    else launch_say(s, "%s", cause);
    c->t_change = now;
  }
  rdzv_close(&n->c);
  n->node = -1;
  n->member = false;
}

/* Nodes of a round larger than the current one could start now. */
static bool ctl_can_grow(const launch_sup *s, const ctl *c) {
  int k = 0, ga = 0;
  return gf_launch_plan_nodes(s->o, ctl_present(c), &k, &ga, NULL) == GF_OK &&
         k > c->nodes;
}

static void ctl_line(launch_sup *s, ctl *c, ctl_node *n, const char *line,
                     double now) {
  const gf_launch_opts *o = s->o;
  rdzv_msg m;
  gf_err e;
  if (rdzv_parse(line, &m, &e) != GF_OK) {
    launch_say(s, "node %d: %s (ignored)", n->node, e.msg);
    return;
  }
  if (m.kind == RDZV_HELLO) {
    if (m.node >= o->nnodes_max || m.nproc != o->nproc) {
      launch_say(s, "an agent on %s refused: node %d, --nproc %d (here: "
                 "--nnodes at most %d, --nproc %d)", m.host, m.node, m.nproc,
                 o->nnodes_max, o->nproc);
      rdzv_send(&n->c, "EXIT %d node 0 runs --nnodes up to %d with --nproc "
                "%d; this agent has --node-rank %d, --nproc %d",
                GF_LAUNCH_EXIT_USAGE, o->nnodes_max, o->nproc, m.node,
                m.nproc);
      return;
    }
    for (int i = 0; i < MAX_CONNS; i++) /* an old connection of that node */
      if (&c->n[i] != n && c->n[i].c.fd >= 0 && c->n[i].node == m.node)
        ctl_drop(s, c, &c->n[i], "it connected again", now);
    n->node = m.node;
    n->down = false;
    memcpy(n->host, m.host, sizeof n->host);
    n->t_join = now;
    c->t_change = now;
    launch_say(s, "node %d (%s) is there (%d of %d..%d)", m.node, m.host,
               ctl_present(c), o->nnodes_min, o->nnodes_max);
    if (c->phase == CTL_RUN && ctl_can_grow(s, c))
      ctl_stop_round(s, c, true, "a node joined: the ranks checkpoint and "
                     "the next round is larger", now);
    else if (c->phase == CTL_RUN)
      rdzv_send(&n->c, "WAIT %d", c->round);
    return;
  }
  if (n->node < 0 || m.kind == RDZV_BEAT) return; /* HELLO comes first */
  if (m.round != c->round || !n->member) return; /* an earlier round's */
  if (m.kind == RDZV_FAIL) {
    char cause[400];
    if (gf_format(cause, sizeof cause, NULL, "cause", "node %d (%s): %s",
                  n->node, n->host, m.text) != GF_OK)
      cause[0] = '\0';
    n->reported = true;
    if (c->phase == CTL_RUN) { /* the failure that ends the round */
      c->start_fail = m.at_start && n->node != 0;
      if (c->start_fail) {
        n->down = true;
        launch_say(s, "node %d (%s) is left out of the next rounds: its "
                   "ranks failed before training (tried again at a restart "
                   "with another cause)", n->node, n->host);
      }
    }
    ctl_fail(s, c, cause, now);
  } else if (m.kind == RDZV_IDLE) {
    n->reported = true;
  } else if (m.kind == RDZV_ENDED) {
    n->reported = true;
    n->ended = m.ended;
    if (m.ended == RDZV_END_USAGE) {
      char why[200];
      if (gf_format(why, sizeof why, NULL, "reason", "the ranks on node %d "
                    "(%s) refused their configuration (their messages say "
                    "why); a restart cannot fix that", n->node, n->host) !=
          GF_OK)
        why[0] = '\0';
      ctl_stop_round(s, c, false, why, now);
      ctl_over(s, c, GF_LAUNCH_EXIT_USAGE, why);
    }
  }
}

/* Whether every member has reported; *node0_end its ENDED. */
static bool ctl_all_reported(const ctl *c, int *node0_end, int *ended) {
  *node0_end = 0;
  *ended = 0;
  bool all = true;
  for (int i = 0; i < MAX_CONNS; i++) {
    const ctl_node *n = &c->n[i];
    if (n->c.fd < 0 || !n->member) continue;
    if (!n->reported) all = false;
    if (n->ended) (*ended)++;
    if (n->node == 0) *node0_end = n->ended;
  }
  return all;
}

static void ctl_go(launch_sup *s, ctl *c, int k, int ga, double now) {
  const gf_launch_opts *o = s->o;
  int port = 0;
  gf_err e;
  if (launch_free_port(&port, &e) != GF_OK) {
    ctl_over(s, c, GF_LAUNCH_EXIT_FAILED, e.msg);
    return;
  }
  int prev_world = c->world;
  c->round++;
  c->nodes = k;
  c->world = k * o->nproc;
  /* members: the k lowest node ranks there (node 0, rank 0, first) */
  int picked = 0;
  for (int node = 0; node < o->nnodes_max; node++)
    for (int i = 0; i < MAX_CONNS; i++) {
      ctl_node *n = &c->n[i];
      if (n->c.fd < 0 || n->node != node) continue;
      n->member = picked < k && !n->down;
      n->reported = false;
      n->ended = 0;
      if (n->member) {
        rdzv_send(&n->c, "GO %d %d %d %d %d %d", c->round, c->world,
                  picked * o->nproc, ga, port, c->round > 1);
        picked++;
      } else {
        rdzv_send(&n->c, "WAIT %d", c->round);
      }
    }
  if (c->round > 1) {
    s->restarts++;
    restart_event *ev = launch_add_event(s, launch_resume_step(s));
    /* a cause < 512 bytes, ints */
    GF_FORMAT_FITS(ev->text, sizeof ev->text, "%s; restarted on %d ranks "
                   "on %d node%s (was %d), resuming from step %" PRId64,
                   c->growth ? "a node joined" : c->cause, c->world, k,
                   k == 1 ? "" : "s", prev_world, ev->step);
    launch_say(s, "restart %d (%d for a failure, of %d): %s", s->restarts,
               c->failures, o->max_restarts, ev->text);
    launch_find_run_id(s);
    launch_flush_events(s);
    s->resume_step = ev->step;
    s->awaiting = true;
    if (c->growth) s->t_fail = c->t_stop;
  } else {
    launch_say(s, "round 1: %d ranks on %d node%s, MASTER_PORT %d", c->world,
               k, k == 1 ? "" : "s", port);
  }
  c->phase = CTL_RUN;
  (void)now;
}

/* One turn of the controller: connections, lines, the round's state. */
static void ctl_poll(launch_sup *s, ctl *c, double now) {
  const gf_launch_opts *o = s->o;
  for (;;) {
    int fd = rdzv_accept(c->lfd);
    if (fd < 0) break;
    int i = 0;
    while (i < MAX_CONNS && c->n[i].c.fd >= 0) i++;
    if (i == MAX_CONNS) {
      close(fd);
      continue;
    }
    rdzv_init(&c->n[i].c);
    c->n[i].c.fd = fd;
    c->n[i].c.t_heard = now;
    c->n[i].node = -1;
    c->n[i].member = false;
  }
  bool ping = now - c->t_ping >= BEAT_S;
  if (ping) c->t_ping = now;
  for (int i = 0; i < MAX_CONNS; i++) {
    ctl_node *n = &c->n[i];
    if (n->c.fd < 0) continue;
    if (ping) rdzv_send(&n->c, "PING");
    bool closed = rdzv_pump(&n->c, now) != 0;
    char line[RDZV_LINE];
    while (n->c.fd >= 0 && rdzv_line(&n->c, line, sizeof line))
      ctl_line(s, c, n, line, now);
    if (closed && n->c.fd >= 0) {
      ctl_drop(s, c, n, "its connection closed", now);
      continue;
    }
    if (n->c.fd >= 0 && now - n->c.t_heard > o->hang_timeout) {
      char why[96];
      if (gf_format(why, sizeof why, NULL, "reason", "no word for %.1f s "
                    "(--hang-timeout)", now - n->c.t_heard) != GF_OK)
        why[0] = '\0';
      ctl_drop(s, c, n, why, now);
    }
  }
  int node0_end = 0, ended = 0;
  if (c->phase == CTL_RUN && ctl_all_reported(c, &node0_end, &ended) &&
      ended) {
    if (node0_end == RDZV_END_DONE)
      ctl_over(s, c, GF_LAUNCH_EXIT_OK, "training finished");
    else if (node0_end == RDZV_END_STOPPED)
      ctl_over(s, c, GF_LAUNCH_EXIT_STOPPED, "stopped by a signal");
    else
      ctl_fail(s, c, "the ranks exited 0, but rank 0 reported neither the "
               "end of training nor a stop", now);
  }
  if (c->phase == CTL_STOPPING) {
    double limit = c->growth ? o->start_timeout : o->hang_timeout + 5;
    bool all = ctl_all_reported(c, &node0_end, &ended);
    if (all || now - c->t_stop > limit) {
      for (int i = 0; i < MAX_CONNS; i++) c->n[i].member = false;
      if (node0_end == RDZV_END_DONE) {
        ctl_over(s, c, GF_LAUNCH_EXIT_OK, "training finished");
      } else if (s->signals) {
        ctl_over(s, c, GF_LAUNCH_EXIT_STOPPED, "stopped by a signal");
      } else if (!c->growth && c->failures >= o->max_restarts) {
        char why[700];
        if (gf_format(why, sizeof why, NULL, "reason", "%d restart%s used "
                      "(--max-restarts); last failure: %s", c->failures,
                      c->failures == 1 ? "" : "s", c->cause) != GF_OK)
          why[0] = '\0';
        launch_end_run(s, MLFLOW_RUN_FAILED, why);
        ctl_over(s, c, GF_LAUNCH_EXIT_FAILED, why);
      } else {
        if (!c->growth) c->failures++;
        if (!c->growth && !c->start_fail) /* left-out nodes are tried again */
          for (int i = 0; i < MAX_CONNS; i++) c->n[i].down = false;
        c->phase = CTL_GATHER;
        c->t_gather = now;
      }
    }
  }
  if (c->phase == CTL_GATHER) {
    int present = ctl_present(c), k = 0, ga = 0;
    gf_err e;
    bool ok = gf_launch_plan_nodes(o, present, &k, &ga, &e) == GF_OK;
    bool node0 = false;
    for (int i = 0; i < MAX_CONNS; i++)
      node0 |= c->n[i].c.fd >= 0 && c->n[i].node == 0;
    /* the last call is for the first round; a restart goes on with the
     * nodes there (one coming back joins the round after) */
    if (ok && node0 &&
        (present >= o->nnodes_max || c->round > 0 ||
         now - c->t_change >= o->rdzv_last_call)) {
      ctl_go(s, c, k, ga, now);
    } else if (now - c->t_gather > o->start_timeout) {
      char why[700];
      if (gf_format(why, sizeof why, NULL, "reason", "no round could start "
                    "within --start-timeout: %s%s%s", ok ? "node 0 is not "
                    "there" : e.msg, c->cause[0] ? "; last failure: " : "",
                    c->cause) != GF_OK)
        why[0] = '\0';
      launch_end_run(s, MLFLOW_RUN_FAILED, why);
      ctl_over(s, c, GF_LAUNCH_EXIT_FAILED, why);
    }
  }
}

static void ctl_free(ctl *c) {
  if (!c) return;
  for (int i = 0; i < MAX_CONNS; i++) rdzv_close(&c->n[i].c);
  if (c->lfd >= 0) close(c->lfd);
  free(c);
}

/* ---- the agent (every node) --------------------------------------------- */

typedef struct agent {
  rdzv_conn up;       /* to node 0 */
  bool hello;         /* HELLO sent on this connection */
  double t_lost;      /* when the connection was lost (or first tried) */
  double t_dial;      /* last dial */
  double t_beat;
  int round;          /* the round whose ranks run here; -1 none */
  bool running;       /* ranks started and not all gone */
  bool draining;      /* DRAIN asked; waiting for them to exit */
  double t_drain;
  launch_attempt *a;
  char hb_dir[GF_PATH_MAX];
} agent;

static void agent_kill(agent *g) {
  if (g->running) launch_kill_all(g->a);
  g->running = false;
  g->draining = false;
}

static gf_status agent_start(launch_sup *s, agent *g, const rdzv_msg *m,
                             gf_err *err) {
  const gf_launch_opts *o = s->o;
  if (m->base + o->nproc > m->world)
    return gf_fail(err, GF_EFORMAT, "node 0 gave ranks %d..%d of a world of "
                   "%d", m->base, m->base + o->nproc - 1, m->world);
  agent_kill(g);
  launch_attempt *a = g->a;
  memset(a, 0, sizeof *a);
  a->world = o->nproc;
  a->rank_base = m->base;
  a->global_world = m->world;
  a->grad_accum = m->ga;
  a->port = m->port;
  a->hb_dir = g->hb_dir;
  for (int i = 0; i < o->nproc; i++) a->r[i].slot = i;
  GF_TRY(gf_format(a->master, sizeof a->master, err, "--rdzv host", "%s",
                   o->rdzv_host));
  GF_TRY(launch_prepare_hb_dir(g->hb_dir, err));
  char **argv = gf_launch_argv(o, m->ga, m->resume != 0, err);
  if (!argv) return GF_ENOMEM;
  launch_say(s, "round %d: ranks %d..%d of %d (MASTER %s:%d%s)", m->round,
             m->base, m->base + o->nproc - 1, m->world, a->master, m->port,
             m->resume ? ", resuming" : "");
  gf_status st = launch_spawn(o, a, argv, s->restarts, err);
  gf_launch_argv_free(argv);
  GF_TRY(st);
  /* this node's --nproc ranks, inside the world node 0 gave */
  GF_ASSERT_STATE(a->state == ATTEMPT_RUNNING && launch_attempt_state_ok(a) &&
                  a->world == o->nproc && a->global_world == m->world);
  g->round = m->round;
  g->running = true;
  g->draining = false;
  return GF_OK;
}

/* A line from node 0; returns an exit status when the job is over, else
 * -1. */
static int agent_line(launch_sup *s, agent *g, const char *line) {
  rdzv_msg m;
  gf_err e;
  memset(&e, 0, sizeof e);
  if (rdzv_parse(line, &m, &e) != GF_OK) {
    launch_say(s, "from node 0: %s (ignored)", e.msg);
    return -1;
  }
  switch (m.kind) {
  case RDZV_GO:
    if (agent_start(s, g, &m, &e) != GF_OK) {
      launch_say(s, "cannot start the ranks: %s", e.msg);
      rdzv_send(&g->up, "FAIL %d start cannot start the ranks: %s", m.round,
                e.msg);
    }
    break;
  case RDZV_WAIT:
    agent_kill(g);
    launch_say(s, "not in round %d: waiting as a spare node", m.round);
    break;
  case RDZV_STOP:
    if (g->running && m.round == g->round)
      launch_say(s, "round %d stopped by node 0: %s", m.round, m.text);
    agent_kill(g);
    rdzv_send(&g->up, "IDLE %d", m.round);
    break;
  case RDZV_DRAIN:
    if (g->running && m.round == g->round && !g->draining) {
      launch_say(s, "round %d: the ranks checkpoint and stop (the world "
                 "grows)", m.round);
      launch_signal_stop(s->o, g->a);
      g->draining = true;
      g->t_drain = gf_mono_s();
    } else if (!g->running) {
      rdzv_send(&g->up, "IDLE %d", m.round);
    }
    break;
  case RDZV_EXIT:
    launch_say(s, "node 0 ends the job: %s", m.text);
    agent_kill(g);
    return m.code;
  default: /* PING, or an agent's message: nothing to do */
    break;
  }
  return -1;
}

/* The connection to node 0: dial when there is none, read its lines, beat.
 * Returns an exit status when the job is over for this agent, else -1. */
static int agent_link(launch_sup *s, agent *g, double now) {
  const gf_launch_opts *o = s->o;
  if (g->up.fd < 0) {
    if (now - g->t_lost > o->start_timeout) {
      launch_say(s, "FAILED: node 0's rendezvous at %s:%d unreachable for "
                 "%.0f s (--start-timeout): node 0 is down or cut off, or "
                 "the job ended meanwhile", o->rdzv_host, o->rdzv_port,
                 now - g->t_lost);
      return GF_LAUNCH_EXIT_FAILED;
    }
    if (now - g->t_dial < 0.5) return -1;
    g->t_dial = now;
    gf_err e;
    if (rdzv_dial(&g->up, o->rdzv_host, o->rdzv_port, 1.0, &e) != GF_OK)
      return -1;
    char host[64] = "?";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0]) strcpy(host, "?");
    host[strcspn(host, " \t")] = '\0';
    rdzv_send(&g->up, "HELLO %d %d %s", o->node_rank, o->nproc, host);
    g->t_beat = now;
    launch_say(s, "node %d: connected to the rendezvous %s:%d", o->node_rank,
               o->rdzv_host, o->rdzv_port);
  }
  const char *lost = NULL;
  if (now - g->t_beat >= BEAT_S) {
    g->t_beat = now;
    if (!rdzv_send(&g->up, "BEAT")) lost = "cannot send";
  }
  /* the lines that came before an end are read first: EXIT then close */
  bool closed = !lost && rdzv_pump(&g->up, now) != 0;
  char line[RDZV_LINE];
  while (!lost && rdzv_line(&g->up, line, sizeof line)) {
    int code = agent_line(s, g, line);
    if (code >= 0) return code;
  }
  if (closed) lost = "its connection closed";
  if (!lost && now - g->up.t_heard > o->hang_timeout) lost = "silent for "
                                                             "--hang-timeout";
  if (lost) {
    launch_say(s, "lost node 0's rendezvous (%s)%s; dialing again", lost,
               g->running ? ": this node's ranks are stopped" : "");
    agent_kill(g);
    rdzv_close(&g->up);
    g->t_lost = now;
  }
  return -1;
}

/* This node's ranks: their exits and heartbeats. */
static void agent_watch(launch_sup *s, agent *g, double now) {
  if (!g->running) return;
  launch_attempt *a = g->a;
  launch_reap(a);
  launch_read_beats(s, a, now);
  if (g->draining) {
    bool gone = true;
    for (int i = 0; i < a->world; i++) gone &= a->r[i].exited;
    if (gone || now - g->t_drain > s->o->start_timeout) {
      agent_kill(g);
      rdzv_send(&g->up, "IDLE %d", g->round);
    }
    return;
  }
  outcome out;
  memset(&out, 0, sizeof out);
  out.start_slot = -1;
  if (launch_find_exit_failure(s->o, a, &out) ||
      launch_find_hang(s->o, a, now, &out)) {
    agent_kill(g);
    launch_say(s, "round %d failed here: %s", g->round, out.cause);
    if (out.end == END_USAGE)
      rdzv_send(&g->up, "ENDED %d usage", g->round);
    else
      rdzv_send(&g->up, "FAIL %d %s %s", g->round,
                out.start_slot >= 0 ? "start" : "train", out.cause);
    return;
  }
  if (launch_all_clean(s->o, a)) {
    launch_read_beats(s, a, gf_mono_s());
    launch_classify_clean_end(s, a, &out);
    g->running = false;
    if (out.end == END_FAILED) {
      rdzv_send(&g->up, "FAIL %d train %s", g->round, out.cause);
    } else {
      rdzv_send(&g->up, "ENDED %d %s", g->round,
                a->rank_base != 0 ? "ok"
                : out.end == END_DONE ? "done" : "stopped");
    }
  }
}

int launch_node_run(const gf_launch_opts *o, FILE *log) {
  launch_sup *s = calloc(1, sizeof *s);
  agent *g = calloc(1, sizeof *g);
  launch_attempt *a = calloc(1, sizeof *a);
  ctl *c = NULL;
  int rc = GF_LAUNCH_EXIT_FAILED;
  if (!s || !g || !a) {
    fprintf(log, "ganflow launch: out of memory\n");
    goto out;
  }
  launch_sup_init(s, o, log);
  g->a = a;
  g->round = -1;
  rdzv_init(&g->up);
  gf_err e;
  memset(&e, 0, sizeof e);
  if (gf_format(g->hb_dir, sizeof g->hb_dir, &e, "heartbeat folder",
                "%s/node-%d", o->hb_dir, o->node_rank) != GF_OK) {
    launch_say(s, "%s", e.msg);
    rc = GF_LAUNCH_EXIT_USAGE;
    goto out;
  }
  if (o->node_rank == 0) {
    c = calloc(1, sizeof *c);
    if (!c) {
      launch_say(s, "out of memory");
      goto out;
    }
    c->lfd = -1;
    for (int i = 0; i < MAX_CONNS; i++) rdzv_init(&c->n[i].c), c->n[i].node = -1;
    if (rdzv_listen(o->rdzv_port, &c->lfd, &e) != GF_OK) {
      launch_say(s, "%s", e.msg);
      goto out;
    }
    c->t_gather = c->t_change = gf_mono_s();
    launch_say(s, "rendezvous on port %d: %d..%d nodes of %d rank%s (%s)",
               o->rdzv_port, o->nnodes_min, o->nnodes_max, o->nproc,
               o->nproc == 1 ? "" : "s", o->conv);
  }
  g->t_lost = gf_mono_s();
  g->t_dial = -1e9;
  for (;;) {
    struct timespec ts = {0, (long)(POLL_S * 1e9)};
    int sig = sigtimedwait(&s->sigs, NULL, &ts);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      s->signals++;
      if (s->signals == 1 && g->running) {
        launch_say(s, "%s: passing SIGTERM to this node's ranks; every rank "
                   "checkpoints at the next step and stops (a second signal "
                   "kills them)", strsignal(sig));
        launch_signal_stop(o, a);
      } else {
        launch_say(s, "%s: ending this node's part of the job",
                   strsignal(sig));
        agent_kill(g);
        if (c) ctl_over(s, c, GF_LAUNCH_EXIT_STOPPED, "stopped by a signal");
        rc = GF_LAUNCH_EXIT_STOPPED;
        break;
      }
    }
    double now = gf_mono_s();
    if (c) ctl_poll(s, c, now);
    if (c && c->phase == CTL_OVER) {
      launch_say(s, "%s", c->exit_why);
      agent_kill(g);
      rc = c->exit_code;
      /* the agents' EXIT lines go out before the sockets close */
      double until = gf_mono_s() + 1.0;
      for (bool pending = true; pending && gf_mono_s() < until;) {
        pending = false;
        for (int i = 0; i < MAX_CONNS; i++)
          if (c->n[i].c.fd >= 0 && rdzv_pump(&c->n[i].c, gf_mono_s()) == 0)
            pending |= c->n[i].c.nout > 0;
        if (pending) {
          struct timespec t10 = {0, 10 * 1000 * 1000};
          nanosleep(&t10, NULL);
        }
      }
      break;
    }
    int code = agent_link(s, g, now);
    if (code >= 0) {
      rc = code;
      if (!c) break;
    }
    agent_watch(s, g, now);
  }
out:
  if (g) agent_kill(g), rdzv_close(&g->up);
  if (s) launch_flush_events(s), mlflow_client_free(s->mc);
  ctl_free(c);
  free(s);
  free(g);
  free(a);
  return rc;
}

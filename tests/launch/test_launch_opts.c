/* test_launch_opts.c - unit tests of `ganflow launch`'s pure parts: its
 * command line (gf_launch_parse), the world size and --grad-accum of an
 * attempt (gf_launch_plan_world), the ranks' argv (gf_launch_argv), and
 * the heartbeat file a rank writes for it (gf/heartbeat.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gf/heartbeat.h"
#include "gf/launch.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Parses a copy of argv (the parser keeps pointers into it). */
static gf_status parse(gf_launch_opts *o, int argc, const char *const *argv,
                       char *msg, size_t cap) {
  static char *copy[64];
  for (int i = 0; i < argc; i++) copy[i] = (char *)argv[i];
  bool help = false;
  gf_err e;
  memset(&e, 0, sizeof e);
  gf_status st = gf_launch_parse(o, argc, copy, NULL, NULL, &help, &e);
  snprintf(msg, cap, "%s", e.msg);
  return st;
}

static void test_parse(void) {
  gf_launch_opts o;
  char msg[512];
  const char *good[] = {"launch", "--nproc", "2", "--nproc-min=1",
                        "--max-restarts", "5", "--hang-timeout", "7.5",
                        "--", "env", "X=1", "/opt/bin/ganflow-train",
                        "--data", "idx:/x", "--batch", "64",
                        "--checkpoint-dir", "/tmp/ck"};
  CHECKF(parse(&o, ARGC(good), good, msg, sizeof msg) == GF_OK, "%s", msg);
  CHECK(o.nproc == 2 && o.nproc_min == 1 && o.max_restarts == 5);
  CHECK(o.hang_timeout == 7.5 && o.start_timeout == 600);
  CHECK(o.launcher == GF_LAUNCHER_LOCAL);
  CHECK(o.train_at == 2 && o.ncmd == 9);
  CHECK(o.train.batch == 64);
  CHECK(strcmp(o.hb_dir, "/tmp/ck/heartbeat") == 0);

  struct {
    const char *argv[12];
    int argc;
    const char *want; /* in the message */
  } bad[] = {
      {{"launch", "--", "ganflow-train", "--data", "x"}, 5, "--nproc is required"},
      {{"launch", "--nproc", "0", "--", "ganflow-train", "--data", "x"}, 7, "--nproc"},
      {{"launch", "--nproc", "2", "--launcher", "pbs", "--", "ganflow-train",
        "--data", "x"}, 9, "--launcher"},
      {{"launch", "--nproc", "2"}, 3, "no training command"},
      {{"launch", "--nproc", "2", "--", "python", "train.py"}, 6, "no ganflow-train"},
      {{"launch", "--nproc", "2", "--", "ganflow-train", "--data", "x",
        "--batch", "many"}, 9, "--batch"},
      {{"launch", "--nproc", "2", "--nproc-min", "3", "--", "ganflow-train",
        "--data", "x"}, 9, "--nproc-min"},
      {{"launch", "--nproc", "2", "--hostfile", "h", "--", "ganflow-train",
        "--data", "x"}, 9, "--hostfile"},
      {{"launch", "--nproc", "2", "--hang-timeout", "-1", "--",
        "ganflow-train", "--data", "x"}, 9, "--hang-timeout"},
      {{"launch", "--nproc", "2", "--frobnicate", "1", "--", "ganflow-train",
        "--data", "x"}, 9, "unknown flag"},
      {{"launch", "--nproc", "2", "stray", "--", "ganflow-train", "--data",
        "x"}, 8, "unexpected argument"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gf_status st = parse(&o, bad[i].argc, bad[i].argv, msg, sizeof msg);
    CHECKF(st == GF_EINVAL && strstr(msg, bad[i].want), "case %zu: %s", i, msg);
  }
}

static gf_launch_opts make(int nproc, int nmin, int batch, int ga, bool exact,
                           int shards) {
  gf_launch_opts o;
  memset(&o, 0, sizeof o);
  gf_train_config_default(&o.train);
  o.nproc = nproc;
  o.nproc_min = nmin;
  o.train.batch = batch;
  o.train.grad_accum = ga;
  o.train.exact_reduce = exact;
  o.train.exact_shards = shards;
  return o;
}

static void test_plan(void) {
  int w = 0, ga = 0;
  gf_err e;
  gf_launch_opts o = make(2, 1, 64, 1, false, 8);
  CHECK(gf_launch_plan_world(&o, 2, &w, &ga, &e) == GF_OK && w == 2 && ga == 1);
  /* one slot lost: the same global batch, the same micro-batch of 32 */
  CHECK(gf_launch_plan_world(&o, 1, &w, &ga, &e) == GF_OK && w == 1 && ga == 2);
  CHECK(gf_launch_plan_world(&o, 0, &w, &ga, &e) == GF_ENOTFOUND);
  CHECK(strstr(e.msg, "--nproc-min") != NULL);
  /* more slots than asked for: nproc */
  CHECK(gf_launch_plan_world(&o, 9, &w, &ga, &e) == GF_OK && w == 2);
  /* 4 ranks of 6 images: 3 splits, and K*4/3 does not divide: K stays */
  o = make(4, 1, 6, 1, false, 8);
  CHECK(gf_launch_plan_world(&o, 4, &w, &ga, &e) == GF_OK && w == 3 && ga == 1);
  o.nproc_min = 4;
  CHECK(gf_launch_plan_world(&o, 4, &w, &ga, &e) == GF_ENOTFOUND);
  CHECK(strstr(e.msg, "splits --batch 6") != NULL);
  /* exact mode: a power of two dividing the shards */
  o = make(4, 1, 64, 1, true, 8);
  CHECK(gf_launch_plan_world(&o, 3, &w, &ga, &e) == GF_OK && w == 2);
  /* --grad-accum 2 at 4 ranks of 16: micro-batch 8, kept at 2 ranks */
  o = make(4, 2, 64, 2, false, 8);
  CHECK(gf_launch_plan_world(&o, 2, &w, &ga, &e) == GF_OK && w == 2 && ga == 4);
}

static int count(char **v) {
  int n = 0;
  while (v[n]) n++;
  return n;
}

static void test_argv(void) {
  gf_launch_opts o;
  char msg[512];
  const char *argv[] = {"launch", "--nproc", "2", "--", "sh", "wrap.sh",
                        "ganflow-train", "--data", "idx:/x", "--grad-accum",
                        "1", "--resume", "never", "--batch=64"};
  REQUIRE(parse(&o, ARGC(argv), argv, msg, sizeof msg) == GF_OK);
  gf_err e;
  char **v = gf_launch_argv(&o, 1, false, &e);
  REQUIRE(v);
  CHECK(count(v) == 10 && strcmp(v[0], "sh") == 0 && strcmp(v[9], "--batch=64") == 0);
  gf_launch_argv_free(v);
  v = gf_launch_argv(&o, 2, true, &e);
  REQUIRE(v);
  /* sh wrap.sh ganflow-train --grad-accum=2 --resume=auto --data idx:/x
   * --batch=64 */
  CHECKF(count(v) == 8, "%d", count(v));
  CHECK(strcmp(v[2], "ganflow-train") == 0);
  CHECK(strcmp(v[3], "--grad-accum=2") == 0);
  CHECK(strcmp(v[4], "--resume=auto") == 0);
  CHECK(strcmp(v[5], "--data") == 0 && strcmp(v[7], "--batch=64") == 0);
  for (int i = 0; v[i]; i++) CHECK(strcmp(v[i], "never") != 0);
  gf_launch_argv_free(v);
}

static void test_heartbeat(void) {
  char dir[] = "/tmp/gf_hb_XXXXXX";
  REQUIRE(mkdtemp(dir));
  gf_heartbeat hb;
  gf_err e;
  gf_heartbeat_rec rec;
  CHECK(gf_heartbeat_read(dir, 3, &rec, &e) == GF_ENOTFOUND);
  REQUIRE(gf_heartbeat_open(&hb, dir, 3, &e) == GF_OK);
  REQUIRE(gf_heartbeat_read(dir, 3, &rec, &e) == GF_OK);
  CHECK(rec.rank == 3 && rec.pid == (long)getpid() && rec.seq == 1);
  CHECK(rec.step == -1 && rec.phase == GF_HB_START && rec.run[0] == '\0');
  CHECK(rec.host[0] != '\0');
  gf_heartbeat_set_run(&hb, "abc/def 12");
  gf_heartbeat_beat(&hb, GF_HB_TRAIN, 41);
  gf_heartbeat_beat(&hb, GF_HB_CHECKPOINT, 42);
  REQUIRE(gf_heartbeat_read(dir, 3, &rec, &e) == GF_OK);
  CHECK(rec.seq == 3 && rec.step == 42 && rec.phase == GF_HB_CHECKPOINT);
  CHECK(strcmp(rec.run, "abc_def_12") == 0);
  gf_heartbeat_close(&hb);
  gf_heartbeat_close(&hb); /* twice is fine */
  char path[64];
  snprintf(path, sizeof path, "%s/rank-3.hb", dir);
  unlink(path);
  rmdir(dir);

  const char *bad[] = {
      "",
      "ganflow-heartbeat 2 rank=0 pid=1 seq=1 step=0 phase=train host=h run=-",
      "ganflow-heartbeat 1 rank=0 pid=1 seq=1 step=0 phase=train host=h",
      "ganflow-heartbeat 1 rank=0 pid=1 seq=1 step=0 phase=nap host=h run=-",
      "ganflow-heartbeat 1 rank=0 pid=0 seq=1 step=0 phase=train host=h run=-",
      "ganflow-heartbeat 1 rank=0 pid=1 seq=1 step=-2 phase=train host=h run=-",
      "ganflow-heartbeat 1 rank=0 pid=1 seq=1 step=0 phase=train host=h run=- x",
      "ganflow-heartbeat 1 rank=0 pid=1 seq=1 step=0 phase=train host=h/ run=-",
      "ganflow-heartbeat 1 rank=x pid=1 seq=1 step=0 phase=train host=h run=-",
      ("ganflow-heartbeat 1 rank=0 pid=1 seq=99999999999999999999 step=0 "
       "phase=train host=h run=-"),
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECKF(gf_heartbeat_parse(bad[i], strlen(bad[i]), &rec, &e) == GF_EFORMAT,
           "case %zu", i);
  const char *ok = "ganflow-heartbeat 1 rank=1 pid=7 seq=9 step=5 phase=done "
                   "host=a.b-c run=r1      \n";
  CHECK(gf_heartbeat_parse(ok, strlen(ok), &rec, &e) == GF_OK);
  CHECK(rec.phase == GF_HB_DONE && strcmp(rec.host, "a.b-c") == 0 &&
        strcmp(rec.run, "r1") == 0);
}

/* An environment of NAME=VALUE strings for gf_launch_parse. */
typedef struct env_list {
  const char *const *kv;
} env_list;

static const char *env_get(void *user, const char *name) {
  const env_list *e = user;
  size_t n = strlen(name);
  for (const char *const *p = e->kv; *p; p++)
    if (strncmp(*p, name, n) == 0 && (*p)[n] == '=') return *p + n + 1;
  return NULL;
}

static gf_status parse_env(gf_launch_opts *o, int argc, const char *const *argv,
                           const char *const *kv, char *msg, size_t cap) {
  static char *copy[64];
  for (int i = 0; i < argc; i++) copy[i] = (char *)argv[i];
  env_list env = {kv};
  bool help = false;
  gf_err e;
  memset(&e, 0, sizeof e);
  gf_status st = gf_launch_parse(o, argc, copy, env_get, &env, &help, &e);
  snprintf(msg, cap, "%s", e.msg);
  return st;
}

static void test_nodes(void) {
  gf_launch_opts o;
  char msg[512];
  const char *none[] = {NULL};
  const char *flags[] = {"launch", "--nnodes", "1:3", "--node-rank", "2",
                         "--rdzv", "node0:29400", "--nproc-per-node", "2",
                         "--rdzv-last-call", "0.5", "--", "ganflow-train",
                         "--data", "x", "--batch", "12"};
  CHECKF(parse_env(&o, ARGC(flags), flags, none, msg, sizeof msg) == GF_OK,
         "%s", msg);
  CHECK(o.nnodes_min == 1 && o.nnodes_max == 3 && o.node_rank == 2);
  CHECK(strcmp(o.rdzv_host, "node0") == 0 && o.rdzv_port == 29400);
  CHECK(o.nproc == 2 && o.rdzv_last_call == 0.5 && strcmp(o.conv, "flags") == 0);
  /* 3 nodes x 2 ranks of 12 images: 6 ranks of 2; 2 nodes: 4 ranks of 3 */
  int k = 0, ga = 0;
  gf_err e;
  CHECK(gf_launch_plan_nodes(&o, 3, &k, &ga, &e) == GF_OK && k == 3 && ga == 1);
  CHECK(gf_launch_plan_nodes(&o, 9, &k, &ga, &e) == GF_OK && k == 3);
  CHECK(gf_launch_plan_nodes(&o, 2, &k, &ga, &e) == GF_OK && k == 2);
  CHECK(gf_launch_plan_nodes(&o, 0, &k, &ga, &e) == GF_ENOTFOUND &&
        strstr(e.msg, "minimum 1"));

  /* Kubeflow Trainer's variables, flags left out */
  const char *bare[] = {"launch", "--", "ganflow-train", "--data", "x"};
  const char *pet[] = {"PET_NNODES=2:4", "PET_NPROC_PER_NODE=1",
                       "PET_NODE_RANK=3", "PET_MASTER_ADDR=job-0.svc",
                       "MASTER_ADDR=ignored", NULL};
  CHECKF(parse_env(&o, ARGC(bare), bare, pet, msg, sizeof msg) == GF_OK, "%s",
         msg);
  CHECK(o.nnodes_min == 2 && o.nnodes_max == 4 && o.node_rank == 3);
  CHECK(o.nproc == 1 && strcmp(o.rdzv_host, "job-0.svc") == 0);
  CHECK(o.rdzv_port == 29500 && strcmp(o.conv, "PET_*") == 0);
  /* PyTorchJob's: one agent per pod */
  const char *ptj[] = {"MASTER_ADDR=pt-master-0", "MASTER_PORT=23456",
                       "WORLD_SIZE=3", "RANK=1", NULL};
  const char *np[] = {"launch", "--nproc", "2", "--", "ganflow-train",
                      "--data", "x"};
  CHECKF(parse_env(&o, ARGC(np), np, ptj, msg, sizeof msg) == GF_OK, "%s", msg);
  CHECK(o.nnodes_min == 3 && o.nnodes_max == 3 && o.node_rank == 1);
  CHECK(strcmp(o.rdzv_host, "pt-master-0") == 0 && o.rdzv_port == 23456);
  CHECK(strcmp(o.conv, "PyTorchJob") == 0);
  /* WORLD_SIZE=1 (or a torchrun world) is no multi-node job */
  const char *one[] = {"MASTER_ADDR=h", "MASTER_PORT=1", "WORLD_SIZE=1",
                       "RANK=0", NULL};
  CHECK(parse_env(&o, ARGC(np), np, one, msg, sizeof msg) == GF_OK &&
        o.nnodes_max == 0);

  /* --nproc auto (Kubeflow's default PET_NPROC_PER_NODE): 1 on the CPU;
   * a CUDA job gets one rank per visible GPU */
  const char *pauto[] = {"PET_NNODES=2", "PET_NPROC_PER_NODE=auto",
                         "PET_NODE_RANK=0", "PET_MASTER_ADDR=h", NULL};
  CHECKF(parse_env(&o, ARGC(bare), bare, pauto, msg, sizeof msg) == GF_OK,
         "%s", msg);
  CHECK(o.nproc == 1 && o.nproc_auto && o.nnodes_max == 2);
  /* A CUDA job: the device is checked by the full parse (no GPU here), so
   * the resolution is checked on gf_launch_parse_env with --device set */
  struct {
    const char *device, *env[3];
    int want; /* ranks, or 0: refused */
    const char *msg;
  } gpu[] = {
      {"cuda", {"CUDA_VISIBLE_DEVICES=0,1,3", NULL}, 3, NULL},
      {"cuda:0", {"CUDA_VISIBLE_DEVICES=GPU-5a1f,MIG-2,-1,4", NULL}, 2, NULL},
      {"cpu", {"CUDA_VISIBLE_DEVICES=0,1", NULL}, 1, NULL},
      {"cuda", {"CUDA_VISIBLE_DEVICES=", NULL}, 0, "no GPU visible"},
      {"cuda", {"CUDA_VISIBLE_DEVICES=-1", NULL}, 0, "hides them"},
  };
  for (size_t i = 0; i < sizeof gpu / sizeof gpu[0]; i++) {
    gf_launch_opts a;
    memset(&a, 0, sizeof a);
    gf_train_config_default(&a.train);
    snprintf(a.train.device, sizeof a.train.device, "%s", gpu[i].device);
    a.nproc_auto = true;
    a.nproc_min = -1;
    a.node_rank = -1;
    env_list env = {gpu[i].env};
    gf_err ge;
    memset(&ge, 0, sizeof ge);
    gf_status st = gf_launch_parse_env(&a, env_get, &env, &ge);
    if (gpu[i].want)
      CHECKF(st == GF_OK && a.nproc == gpu[i].want && a.nproc_min == a.nproc,
             "gpu case %zu: %d ranks (%s)", i, a.nproc, ge.msg);
    else
      CHECKF(st == GF_EINVAL && strstr(ge.msg, gpu[i].msg), "gpu case %zu: %s",
             i, ge.msg);
  }
  const char *flag_cpu[] = {"launch", "--nproc", "auto", "--nproc-min", "1",
                            "--", "ganflow-train", "--data", "x"};
  CHECKF(parse_env(&o, ARGC(flag_cpu), flag_cpu, none, msg, sizeof msg) ==
             GF_OK, "%s", msg);
  CHECK(o.nproc == 1 && o.nproc_min == 1);

  struct {
    const char *const *argv;
    int argc;
    const char *env[4];
    const char *want;
  } bad[] = {
      {(const char *const[]){"launch", "--nnodes", "2:1", "--nproc", "1",
                             "--rdzv", "h:1", "--", "ganflow-train", "--data", "x"},
       11, {NULL}, "--nnodes"},
      {(const char *const[]){"launch", "--nnodes", "2", "--nproc", "1", "--",
                             "ganflow-train", "--data", "x"},
       9, {NULL}, "--rdzv"},
      {(const char *const[]){"launch", "--nnodes", "2", "--node-rank", "2",
                             "--nproc", "1", "--rdzv", "h:1", "--",
                             "ganflow-train", "--data", "x"},
       13, {NULL}, "--node-rank 2"},
      {(const char *const[]){"launch", "--nnodes", "2", "--nproc", "1",
                             "--rdzv", "h:0", "--", "ganflow-train", "--data", "x"},
       11, {NULL}, "HOST:PORT"},
      {(const char *const[]){"launch", "--nnodes", "2", "--nproc", "1",
                             "--rdzv", "a b:5", "--", "ganflow-train", "--data", "x"},
       11, {NULL}, "HOST:PORT"},
      {(const char *const[]){"launch", "--node-rank", "1", "--nproc", "1",
                             "--", "ganflow-train", "--data", "x"},
       9, {NULL}, "go with --nnodes"},
      {(const char *const[]){"launch", "--", "ganflow-train", "--data", "x"},
       5, {"PET_NNODES=2", "PET_NPROC_PER_NODE=x", NULL}, "PET_NPROC_PER_NODE"},
      {(const char *const[]){"launch", "--nproc", "1", "--", "ganflow-train", "--data", "x"},
       7, {"PET_NNODES=2", "PET_MASTER_ADDR=a;b", NULL}, "PET_MASTER_ADDR"},
      {(const char *const[]){"launch", "--nproc", "1", "--", "ganflow-train", "--data", "x"},
       7, {"PET_NNODES=2", "PET_MASTER_ADDR=h", "PET_MASTER_PORT=70000", NULL},
       "PET_MASTER_PORT"},
      {(const char *const[]){"launch", "--nproc", "cpu", "--", "ganflow-train",
                             "--data", "x"},
       7, {NULL}, "'cpu'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gf_status st = parse_env(&o, bad[i].argc, bad[i].argv, bad[i].env, msg,
                             sizeof msg);
    CHECKF(st == GF_EINVAL && strstr(msg, bad[i].want), "case %zu: %s", i, msg);
  }
}

int main(void) {
  test_parse();
  test_nodes();
  test_plan();
  test_argv();
  test_heartbeat();
  return check_report();
}

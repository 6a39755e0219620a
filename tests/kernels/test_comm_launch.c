/* test_comm_launch.c - gf_launch_detect over tables of fake environments:
 * each launcher (none, mpirun, srun via PMIx and via Slurm, torchrun), the
 * precedence between them, the defaults when a launcher leaves out the
 * local layout, SLURM_TASKS_PER_NODE's compressed form, and every malformed
 * value (GF_EINVAL with a message naming the variable); MASTER_ADDR and
 * MASTER_PORT under mpirun and srun (optional, checked when both are set).
 * Also the names and parsers of gf/comm.h and gf_launch_getenv on the real
 * environment. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/comm.h"

/* A fake environment: "NAME=VALUE" strings, NULL-terminated. */
typedef struct fake_env {
  const char *vars[16];
} fake_env;

static const char *fake_get(void *user, const char *name) {
  const fake_env *e = user;
  size_t n = strlen(name);
  for (int i = 0; i < 16 && e->vars[i]; i++)
    if (strncmp(e->vars[i], name, n) == 0 && e->vars[i][n] == '=')
      return e->vars[i] + n + 1;
  return NULL;
}

typedef struct good_case {
  const char *label;
  fake_env env;
  const char *launcher;
  int rank, world, local_rank, local_world;
  const char *addr;
  int port;
} good_case;

static const good_case GOOD[] = {
    {"empty", {{NULL}}, "none", 0, 1, 0, 1, "", 0},
    {"unrelated vars", {{"HOME=/root", "PATH=/bin", NULL}}, "none", 0, 1, 0,
     1, "", 0},
    {"mpirun",
     {{"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8",
       "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=4",
       NULL}},
     "mpirun", 5, 8, 1, 4, "", 0},
    {"mpirun without local vars (one node assumed)",
     {{"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4", NULL}},
     "mpirun", 3, 4, 3, 4, "", 0},
    {"mpirun leading zeros",
     {{"OMPI_COMM_WORLD_RANK=007", "OMPI_COMM_WORLD_SIZE=0010", NULL}},
     "mpirun", 7, 10, 7, 10, "", 0},
    {"mpirun largest world",
     {{"OMPI_COMM_WORLD_RANK=65535", "OMPI_COMM_WORLD_SIZE=65536",
       "OMPI_COMM_WORLD_LOCAL_RANK=0", "OMPI_COMM_WORLD_LOCAL_SIZE=1",
       NULL}},
     "mpirun", 65535, 65536, 0, 1, "", 0},
    {"mpirun wins over slurm and torchrun",
     {{"RANK=9", "WORLD_SIZE=10", "SLURM_PROCID=2", "SLURM_NTASKS=3",
       "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", NULL}},
     "mpirun", 1, 2, 1, 2, "", 0},
    {"pmix with the OMPI sizes",
     {{"PMIX_RANK=2", "OMPI_COMM_WORLD_SIZE=6",
       "OMPI_COMM_WORLD_LOCAL_RANK=0", "OMPI_COMM_WORLD_LOCAL_SIZE=3",
       NULL}},
     "srun", 2, 6, 0, 3, "", 0},
    {"pmix rank wins over SLURM_PROCID, slurm sizes",
     {{"PMIX_RANK=4", "SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=0",
       "SLURM_NTASKS_PER_NODE=2", NULL}},
     "srun", 4, 8, 0, 2, "", 0},
    {"slurm",
     {{"SLURM_PROCID=7", "SLURM_NTASKS=8", "SLURM_LOCALID=3",
       "SLURM_NTASKS_PER_NODE=4", NULL}},
     "srun", 7, 8, 3, 4, "", 0},
    {"slurm wins over torchrun",
     {{"RANK=0", "WORLD_SIZE=1", "SLURM_PROCID=1", "SLURM_NTASKS=2", NULL}},
     "srun", 1, 2, 1, 2, "", 0},
    {"slurm tasks per node, node 1 of 2(x3),1",
     {{"SLURM_PROCID=3", "SLURM_NTASKS=7", "SLURM_LOCALID=1",
       "SLURM_NODEID=1", "SLURM_TASKS_PER_NODE=2(x3),1", NULL}},
     "srun", 3, 7, 1, 2, "", 0},
    {"slurm tasks per node, last node",
     {{"SLURM_PROCID=6", "SLURM_NTASKS=7", "SLURM_LOCALID=0",
       "SLURM_NODEID=3", "SLURM_TASKS_PER_NODE=2(x3),1", NULL}},
     "srun", 6, 7, 0, 1, "", 0},
    {"slurm tasks per node, uniform, no node id",
     {{"SLURM_PROCID=5", "SLURM_NTASKS=8", "SLURM_LOCALID=1",
       "SLURM_TASKS_PER_NODE=4(x2)", NULL}},
     "srun", 5, 8, 1, 4, "", 0},
    {"slurm NTASKS_PER_NODE wins over TASKS_PER_NODE",
     {{"SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_LOCALID=0",
       "SLURM_NTASKS_PER_NODE=2", "SLURM_TASKS_PER_NODE=garbage", NULL}},
     "srun", 0, 4, 0, 2, "", 0},
    {"mpirun with MASTER_ADDR and MASTER_PORT (for tcp)",
     {{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2",
       "MASTER_ADDR=10.1.2.3", "MASTER_PORT=29400", NULL}},
     "mpirun", 1, 2, 1, 2, "10.1.2.3", 29400},
    {"mpirun with MASTER_ADDR alone: ignored",
     {{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2",
       "MASTER_ADDR=10.1.2.3", NULL}},
     "mpirun", 1, 2, 1, 2, "", 0},
    {"srun with MASTER_ADDR and MASTER_PORT",
     {{"SLURM_PROCID=2", "SLURM_NTASKS=4", "MASTER_ADDR=node-7",
       "MASTER_PORT=1", NULL}},
     "srun", 2, 4, 2, 4, "node-7", 1},
    {"srun with MASTER_PORT alone: ignored",
     {{"SLURM_PROCID=0", "SLURM_NTASKS=1", "MASTER_PORT=oops", NULL}},
     "srun", 0, 1, 0, 1, "", 0},
    {"torchrun",
     {{"RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2",
       "MASTER_ADDR=node-01.cluster", "MASTER_PORT=29500", NULL}},
     "torchrun", 3, 4, 1, 2, "node-01.cluster", 29500},
    {"torchrun ipv6 address",
     {{"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=fe80::1%eth0",
       "MASTER_PORT=1", NULL}},
     "torchrun", 1, 2, 1, 2, "fe80::1%eth0", 1},
    {"torchrun world 1 needs no master",
     {{"RANK=0", "WORLD_SIZE=1", NULL}}, "torchrun", 0, 1, 0, 1, "", 0},
    {"torchrun highest port",
     {{"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=10.0.0.1",
       "MASTER_PORT=65535", NULL}},
     "torchrun", 0, 2, 0, 2, "10.0.0.1", 65535},
};

typedef struct bad_case {
  fake_env env;
  const char *names; /* the variable the message must name */
} bad_case;

#define OMPI2 "OMPI_COMM_WORLD_SIZE=2"
#define TR2 "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=29500"
static const bad_case BAD[] = {
    /* integers only */
    {{{"OMPI_COMM_WORLD_RANK=abc", OMPI2, NULL}}, "OMPI_COMM_WORLD_RANK"},
    {{{"OMPI_COMM_WORLD_RANK=", OMPI2, NULL}}, "OMPI_COMM_WORLD_RANK"},
    {{{"OMPI_COMM_WORLD_RANK=-1", OMPI2, NULL}}, "OMPI_COMM_WORLD_RANK"},
    {{{"OMPI_COMM_WORLD_RANK=+1", OMPI2, NULL}}, "OMPI_COMM_WORLD_RANK"},
    {{{"OMPI_COMM_WORLD_RANK= 1", OMPI2, NULL}}, "OMPI_COMM_WORLD_RANK"},
    {{{"OMPI_COMM_WORLD_RANK=1 ", OMPI2, NULL}}, "OMPI_COMM_WORLD_RANK"},
    {{{"OMPI_COMM_WORLD_RANK=1.0", OMPI2, NULL}}, "OMPI_COMM_WORLD_RANK"},
    {{{"OMPI_COMM_WORLD_RANK=0x1", OMPI2, NULL}}, "OMPI_COMM_WORLD_RANK"},
    {{{"OMPI_COMM_WORLD_RANK=1e3", OMPI2, NULL}}, "OMPI_COMM_WORLD_RANK"},
    {{{"OMPI_COMM_WORLD_RANK=99999999999999999999", OMPI2, NULL}},
     "OMPI_COMM_WORLD_RANK"},
    {{{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=two", NULL}},
     "OMPI_COMM_WORLD_SIZE"},
    {{{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=0", NULL}},
     "OMPI_COMM_WORLD_SIZE"},
    {{{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=65537", NULL}},
     "OMPI_COMM_WORLD_SIZE"},
    {{{"OMPI_COMM_WORLD_RANK=0", NULL}}, "OMPI_COMM_WORLD_SIZE"},
    {{{"OMPI_COMM_WORLD_RANK=2", OMPI2, NULL}}, "OMPI_COMM_WORLD_RANK"},
    {{{"OMPI_COMM_WORLD_RANK=0", OMPI2, "OMPI_COMM_WORLD_LOCAL_RANK=x",
       NULL}},
     "OMPI_COMM_WORLD_LOCAL_RANK"},
    {{{"OMPI_COMM_WORLD_RANK=0", OMPI2, "OMPI_COMM_WORLD_LOCAL_RANK=1",
       "OMPI_COMM_WORLD_LOCAL_SIZE=1", NULL}},
     "OMPI_COMM_WORLD_LOCAL_RANK"},
    {{{"OMPI_COMM_WORLD_RANK=0", OMPI2, "OMPI_COMM_WORLD_LOCAL_SIZE=0",
       NULL}},
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {{{"OMPI_COMM_WORLD_RANK=0", OMPI2, "OMPI_COMM_WORLD_LOCAL_SIZE=3",
       NULL}},
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    /* srun */
    {{{"PMIX_RANK=x", "SLURM_NTASKS=2", NULL}}, "PMIX_RANK"},
    {{{"PMIX_RANK=0", NULL}}, "SLURM_NTASKS"},
    {{{"SLURM_PROCID=1", NULL}}, "SLURM_NTASKS"},
    {{{"SLURM_PROCID=", "SLURM_NTASKS=2", NULL}}, "SLURM_PROCID"},
    {{{"SLURM_PROCID=2", "SLURM_NTASKS=2", NULL}}, "SLURM_PROCID"},
    {{{"PMIX_RANK=2", "OMPI_COMM_WORLD_SIZE=2", NULL}}, "PMIX_RANK"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=-2", NULL}}, "SLURM_NTASKS"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=2",
       "SLURM_NTASKS_PER_NODE=2", NULL}},
     "SLURM_LOCALID"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_NTASKS_PER_NODE=2(x1)",
       NULL}},
     "SLURM_NTASKS_PER_NODE"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_TASKS_PER_NODE=2(x",
       NULL}},
     "SLURM_TASKS_PER_NODE"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_TASKS_PER_NODE=2(y1)",
       NULL}},
     "SLURM_TASKS_PER_NODE"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_TASKS_PER_NODE=", NULL}},
     "SLURM_TASKS_PER_NODE"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_TASKS_PER_NODE=1,,1",
       NULL}},
     "SLURM_TASKS_PER_NODE"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_TASKS_PER_NODE=0", NULL}},
     "SLURM_TASKS_PER_NODE"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_TASKS_PER_NODE=1(x0)",
       NULL}},
     "SLURM_TASKS_PER_NODE"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=3", "SLURM_TASKS_PER_NODE=2,1",
       NULL}},
     "SLURM_TASKS_PER_NODE"}, /* mixed counts, no SLURM_NODEID */
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=3", "SLURM_NODEID=2",
       "SLURM_TASKS_PER_NODE=2,1", NULL}},
     "SLURM_NODEID"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=3", "SLURM_NODEID=z",
       "SLURM_TASKS_PER_NODE=2,1", NULL}},
     "SLURM_NODEID"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_TASKS_PER_NODE=3", NULL}},
     "SLURM_TASKS_PER_NODE"}, /* local world above world */
    /* torchrun */
    {{{"RANK=1", NULL}}, "WORLD_SIZE"},
    {{{"WORLD_SIZE=2", NULL}}, "RANK"},
    {{{"RANK=one", TR2, NULL}}, "RANK"},
    {{{"RANK=2", TR2, NULL}}, "RANK"},
    {{{"RANK=0", "WORLD_SIZE=2", "MASTER_PORT=29500", NULL}}, "MASTER_ADDR"},
    {{{"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", NULL}}, "MASTER_PORT"},
    {{{"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=", "MASTER_PORT=1", NULL}},
     "MASTER_ADDR"},
    {{{"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=a b", "MASTER_PORT=1", NULL}},
     "MASTER_ADDR"},
    {{{"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h;rm", "MASTER_PORT=1", NULL}},
     "MASTER_ADDR"},
    {{{"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=0", NULL}},
     "MASTER_PORT"},
    {{{"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=65536",
       NULL}},
     "MASTER_PORT"},
    {{{"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=29500x",
       NULL}},
     "MASTER_PORT"},
    {{{"RANK=0", "WORLD_SIZE=1", "MASTER_PORT=http", NULL}}, "MASTER_PORT"},
    /* under mpirun and srun both are optional, but checked when both set */
    {{{"OMPI_COMM_WORLD_RANK=0", OMPI2, "MASTER_ADDR=h", "MASTER_PORT=0",
       NULL}},
     "MASTER_PORT"},
    {{{"OMPI_COMM_WORLD_RANK=0", OMPI2, "MASTER_ADDR=a b", "MASTER_PORT=1",
       NULL}},
     "MASTER_ADDR"},
    {{{"SLURM_PROCID=0", "SLURM_NTASKS=2", "MASTER_ADDR=h",
       "MASTER_PORT=65536", NULL}},
     "MASTER_PORT"},
    {{{"RANK=0", TR2, "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=1", NULL}},
     "LOCAL_RANK"},
    {{{"RANK=0", TR2, "LOCAL_WORLD_SIZE=3", NULL}}, "LOCAL_WORLD_SIZE"},
    {{{"RANK=0", TR2, "LOCAL_RANK=-0", NULL}}, "LOCAL_RANK"},
};

static void test_good(void) {
  for (size_t i = 0; i < sizeof GOOD / sizeof GOOD[0]; i++) {
    const good_case *g = &GOOD[i];
    gf_launch_info li;
    gf_err e = {0};
    memset(&li, 0x5a, sizeof li);
    gf_status st = gf_launch_detect(&li, fake_get, (void *)&g->env, &e);
    CHECKF(st == GF_OK, "%s: %s", g->label, e.msg);
    if (st) continue;
    CHECKF(strcmp(li.launcher, g->launcher) == 0, "%s: launcher %s",
           g->label, li.launcher);
    CHECKF(li.rank == g->rank && li.world_size == g->world &&
               li.local_rank == g->local_rank &&
               li.local_world_size == g->local_world,
           "%s: %d/%d local %d/%d", g->label, li.rank, li.world_size,
           li.local_rank, li.local_world_size);
    CHECKF(strcmp(li.master_addr, g->addr) == 0 && li.master_port == g->port,
           "%s: master %s:%d", g->label, li.master_addr, li.master_port);
    CHECKF(li.hostname[0] != '\0' &&
               memchr(li.hostname, '\0', sizeof li.hostname) != NULL,
           "%s: hostname", g->label);
  }
}

static void test_bad(void) {
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    const bad_case *b = &BAD[i];
    gf_launch_info li;
    gf_err e = {0};
    memset(&li, 0x5a, sizeof li);
    gf_launch_info before = li;
    gf_status st = gf_launch_detect(&li, fake_get, (void *)&b->env, &e);
    CHECKF(st == GF_EINVAL, "case %zu (%s, %s...): %s", i, b->names,
           b->env.vars[0], gf_status_name(st));
    CHECKF(e.code == GF_EINVAL && strstr(e.msg, b->names) != NULL,
           "case %zu: message \"%s\" does not name %s", i, e.msg, b->names);
    CHECKF(memcmp(&li, &before, sizeof li) == 0,
           "case %zu: out written on failure", i);
  }
}

/* The value is quoted in the message in gf/parse.h's one wording, control
 * bytes escaped and long values cut. */
static void test_message_quoting(void) {
  gf_err e = {0};
  gf_launch_info li;
  fake_env env = {{"OMPI_COMM_WORLD_RANK=1\x01\n\"", OMPI2, NULL}};
  CHECK(gf_launch_detect(&li, fake_get, &env, &e) == GF_EINVAL);
  CHECKF(strstr(e.msg, "OMPI_COMM_WORLD_RANK: '1\\x01\\x0a\"' is not an "
                       "integer") != NULL,
         "%s", e.msg);
  char longv[400] = "RANK=";
  memset(longv + 5, '7', 300);
  longv[305] = 'x';
  fake_env env2 = {{longv, "WORLD_SIZE=2", NULL}};
  CHECK(gf_launch_detect(&li, fake_get, &env2, &e) == GF_EINVAL);
  CHECKF(strstr(e.msg, "RANK") && strstr(e.msg, "...") &&
             strlen(e.msg) < 200,
         "%s", e.msg);
  CHECK(gf_launch_detect(NULL, fake_get, &env, &e) == GF_EINVAL);
  CHECK(gf_launch_detect(&li, NULL, &env, &e) == GF_EINVAL);
}

static void test_getenv(void) {
  gf_err e = {0};
  gf_launch_info li;
  /* the test may itself run under a launcher: clear what it may have set */
  const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID",
                        "RANK", "WORLD_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
  CHECK(gf_launch_getenv(NULL, "GF_TEST_NO_SUCH_VAR") == NULL);
  CHECK(gf_launch_detect(&li, gf_launch_getenv, NULL, &e) == GF_OK);
  CHECK_STR_EQ(li.launcher, "none");
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29511", 1);
  CHECK(gf_launch_detect(&li, gf_launch_getenv, NULL, &e) == GF_OK);
  CHECK_STR_EQ(li.launcher, "torchrun");
  CHECK(li.rank == 1 && li.world_size == 2 && li.master_port == 29511);
  CHECK_STR_EQ(gf_launch_getenv(NULL, "MASTER_ADDR"), "127.0.0.1");
}

static void test_names(void) {
  gf_err e = {0};
  gf_allreduce_algo a;
  gf_comm_backend b;
  const char *names[] = {"ring", "reduce-bcast", "hierarchical", "tree"};
  for (int i = 0; i < 4; i++) {
    CHECK_STR_EQ(gf_allreduce_algo_name((gf_allreduce_algo)i), names[i]);
    CHECK(gf_allreduce_algo_parse(names[i], &a, &e) == GF_OK && (int)a == i);
  }
  CHECK(gf_allreduce_algo_parse("Ring", &a, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "hierarchical") != NULL);
  CHECK(gf_allreduce_algo_parse(NULL, &a, &e) == GF_EINVAL);
  CHECK_STR_EQ(gf_allreduce_algo_name((gf_allreduce_algo)9), "?");
  const char *bn[] = {"local", "mpi", "nccl", "tcp"};
  for (int i = 0; i < 4; i++) {
    CHECK_STR_EQ(gf_comm_backend_name((gf_comm_backend)i), bn[i]);
    CHECK(gf_comm_backend_parse(bn[i], &b, &e) == GF_OK && (int)b == i);
  }
  CHECK(gf_comm_backend_parse("gloo", &b, &e) == GF_EINVAL);
  CHECK(gf_comm_built(GF_COMM_LOCAL));
  CHECK(gf_comm_built(GF_COMM_TCP)); /* every POSIX build */
  CHECK_STR_EQ(gf_comm_backend_name((gf_comm_backend)4), "?");
}

int main(void) {
  test_good();
  test_bad();
  test_message_quoting();
  test_names();
  test_getenv();
  return check_report();
}

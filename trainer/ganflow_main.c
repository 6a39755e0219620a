/* ganflow_main.c - `ganflow`, the admin command line: a small table of
 * subcommands over the libraries (inspect and sync now; promote, models and
 * generate come with the serving issue). Exit codes: 0 success, 1 runtime error
 * (message on stderr), 2 usage error. Training is ganflow-train's job. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gf/checkpoint.h"
#include "gf/status.h"
#include "mlflow/mlflow.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

typedef struct command {
  const char *name;
  const char *args;  /* argument synopsis for usage lines */
  const char *help;  /* one line */
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
} command;

static int cmd_inspect(int argc, char **argv);
static int cmd_sync(int argc, char **argv);

static const command COMMANDS[] = {
    {"inspect", "PATH",
     "describe a checkpoint (.safetensors) or an MLflow model directory: "
     "metadata, tensors, digest status",
     cmd_inspect},
    {"sync", "PATH",
     "send metrics left in an outbox (a checkpoint directory's "
     "mlflow.outbox, any *.outbox in PATH, or one file) to the MLflow "
     "server of MLFLOW_TRACKING_URI; each file is removed once sent",
     cmd_sync},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *out) {
  fprintf(out, "usage: ganflow COMMAND [ARGS]\n       ganflow --help\n\ncommands:\n");
  for (size_t i = 0; i < N_COMMANDS; i++)
    fprintf(out, "  %s %s\n      %s\n", COMMANDS[i].name, COMMANDS[i].args,
            COMMANDS[i].help);
  fprintf(out, "\nexit status: 0 success, 1 error, 2 usage error\n");
}

static void command_usage(const command *c, FILE *out) {
  fprintf(out, "usage: ganflow %s %s\n  %s\n", c->name, c->args, c->help);
}

static int is_help(const char *a) {
  return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

static int cmd_inspect(int argc, char **argv) {
  const command *self = &COMMANDS[0];
  if (argc == 2 && is_help(argv[1])) {
    command_usage(self, stdout);
    return 0;
  }
  if (argc != 2 || (argv[1][0] == '-' && argv[1][1] != '\0')) {
    fprintf(stderr, "ganflow inspect: expected one PATH\n");
    command_usage(self, stderr);
    return EXIT_USAGE;
  }
  gf_err err;
  memset(&err, 0, sizeof err);
  gf_status st = gf_inspect_print(argv[1], stdout, &err);
  if (st != GF_OK) {
    fprintf(stderr, "ganflow inspect: error: %s (%s)\n", err.msg,
            gf_status_name(st));
    return EXIT_RUNTIME;
  }
  return 0;
}

/* Replays one outbox file; 0 on success. */
static int sync_file(mlflow_client *c, const char *path) {
  mlflow_error e;
  memset(&e, 0, sizeof e);
  size_t n = 0;
  mlflow_status st = mlflow_outbox_replay(c, path, &n, &e);
  if (st != MLFLOW_OK) {
    fprintf(stderr, "ganflow sync: %s: %s (%zu batches sent before it; the "
                    "file is kept, run sync again)\n", path, e.message, n);
    return EXIT_RUNTIME;
  }
  printf("%s: %zu batches sent\n", path, n);
  return 0;
}

static int has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n > k && strcmp(s + n - k, suffix) == 0;
}

static int cmd_sync(int argc, char **argv) {
  const command *self = &COMMANDS[1];
  if (argc == 2 && is_help(argv[1])) {
    command_usage(self, stdout);
    return 0;
  }
  if (argc != 2 || (argv[1][0] == '-' && argv[1][1] != '\0')) {
    fprintf(stderr, "ganflow sync: expected one PATH\n");
    command_usage(self, stderr);
    return EXIT_USAGE;
  }
  struct stat sb;
  if (stat(argv[1], &sb) != 0) {
    fprintf(stderr, "ganflow sync: %s does not exist\n", argv[1]);
    return EXIT_RUNTIME;
  }
  mlflow_config cfg;
  mlflow_error e;
  memset(&e, 0, sizeof e);
  mlflow_client *c = NULL;
  if (mlflow_config_from_env(&cfg, &e) != MLFLOW_OK ||
      mlflow_client_new(&c, &cfg, &e) != MLFLOW_OK) {
    fprintf(stderr, "ganflow sync: %s\n", e.message);
    mlflow_config_free(&cfg);
    return EXIT_RUNTIME;
  }
  int rc = 0, files = 0;
  if (!S_ISDIR(sb.st_mode)) {
    rc = sync_file(c, argv[1]);
    files = 1;
  } else {
    DIR *d = opendir(argv[1]);
    struct dirent *ent;
    while (d && (ent = readdir(d))) {
      if (ent->d_name[0] == '.' || !has_suffix(ent->d_name, ".outbox")) continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[1], ent->d_name);
      rc |= sync_file(c, path);
      files++;
    }
    if (d) closedir(d);
    if (!d) {
      fprintf(stderr, "ganflow sync: cannot read directory %s\n", argv[1]);
      rc = EXIT_RUNTIME;
    } else if (files == 0) {
      printf("%s: no outbox, nothing to send\n", argv[1]);
    }
  }
  mlflow_client_free(c);
  mlflow_config_free(&cfg);
  return rc ? EXIT_RUNTIME : 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  if (is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
    if (argc > 2) {
      for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[2], COMMANDS[i].name) == 0) {
          command_usage(&COMMANDS[i], stdout);
          return 0;
        }
      fprintf(stderr, "ganflow: unknown command '%s'\n", argv[2]);
      return EXIT_USAGE;
    }
    usage(stdout);
    return 0;
  }
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (strcmp(argv[1], COMMANDS[i].name) == 0)
      return COMMANDS[i].run(argc - 1, argv + 1);
  fprintf(stderr, "ganflow: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return EXIT_USAGE;
}

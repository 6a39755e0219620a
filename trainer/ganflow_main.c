/* ganflow_main.c - `ganflow`, the admin command line: a small table of
 * subcommands over the libraries (inspect now; promote, models, generate
 * and sync come with later issues). Exit codes: 0 success, 1 runtime error
 * (message on stderr), 2 usage error. Training is ganflow-train's job. */
#include <stdio.h>
#include <string.h>

#include "gf/checkpoint.h"
#include "gf/status.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

typedef struct command {
  const char *name;
  const char *args;  /* argument synopsis for usage lines */
  const char *help;  /* one line */
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
} command;

static int cmd_inspect(int argc, char **argv);

static const command COMMANDS[] = {
    {"inspect", "PATH",
     "describe a checkpoint (.safetensors) or an MLflow model directory: "
     "metadata, tensors, digest status",
     cmd_inspect},
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

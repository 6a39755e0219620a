/* fuzz_launch_env.c - fuzz target for gf_launch_detect: the input is split
 * into lines of NAME=VALUE served by the `get` callback (the first line
 * with a name wins; a line without '=' is skipped). Any input gives
 * GF_EINVAL with a NUL-terminated message, or a launch whose every field
 * keeps the documented invariants. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gf/comm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fuzz_env {
  const char *text; /* the input as NUL-separated lines, owned by the run */
  size_t size;
} fuzz_env;

static const char *fuzz_get(void *user, const char *name) {
  const fuzz_env *e = user;
  size_t n = strlen(name);
  for (size_t i = 0; i < e->size;) {
    const char *line = e->text + i;
    size_t len = strlen(line);
    if (len > n && memcmp(line, name, n) == 0 && line[n] == '=')
      return line + n + 1;
    i += len + 1;
  }
  return NULL;
}

static int terminated(const char *s, size_t cap) {
  return memchr(s, '\0', cap) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* lines end at '\n'; NUL bytes end a value early, as in a real env */
  char *text = malloc(size + 1);
  if (!text) return 0;
  for (size_t i = 0; i < size; i++)
    text[i] = data[i] == '\n' ? '\0' : (char)data[i];
  text[size] = '\0';
  fuzz_env env = {text, size + 1};
  gf_launch_info li;
  gf_err err;
  memset(&err, 0, sizeof err);
  gf_status st = gf_launch_detect(&li, fuzz_get, &env, &err);
  if (st != GF_OK) {
    if (st != GF_EINVAL || err.code != GF_EINVAL ||
        !terminated(err.msg, sizeof err.msg) || !err.msg[0])
      __builtin_trap();
  } else {
    if (li.world_size < 1 || li.world_size > 65536 || li.rank < 0 ||
        li.rank >= li.world_size || li.local_world_size < 1 ||
        li.local_world_size > li.world_size || li.local_rank < 0 ||
        li.local_rank >= li.local_world_size || li.master_port < 0 ||
        li.master_port > 65535 || !terminated(li.launcher, 16) ||
        !terminated(li.master_addr, 256) || !terminated(li.hostname, 256))
      __builtin_trap();
    if (strcmp(li.launcher, "none") && strcmp(li.launcher, "mpirun") &&
        strcmp(li.launcher, "srun") && strcmp(li.launcher, "torchrun"))
      __builtin_trap();
    if (!strcmp(li.launcher, "torchrun") && li.world_size > 1 &&
        (!li.master_addr[0] || li.master_port == 0))
      __builtin_trap();
  }
  free(text);
  return 0;
}

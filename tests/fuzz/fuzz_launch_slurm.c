/* fuzz_launch_slurm.c - fuzz target for gf_capacity_from_slurm, which turns
 * scontrol's answers (`scontrol show job -o` and `scontrol show hostnames`,
 * another program's output) into a capacity file's text. The input is the
 * job record, a NUL byte, then the host names (no NUL: no names). Any input
 * gives GF_EFORMAT with a NUL-terminated message, or a text that the
 * capacity file's own parser accepts, with one host per name. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gf/launch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *job = (const char *)data;
  const char *nul = memchr(job, '\0', size);
  size_t jl = nul ? (size_t)(nul - job) : size;
  const char *hosts = nul ? nul + 1 : "";
  size_t hl = nul ? size - jl - 1 : 0;
  static char out[GF_CAP_FILE_MAX + 1];
  static gf_capacity c;
  gf_err err;
  memset(&err, 0, sizeof err);
  gf_status st = gf_capacity_from_slurm(job, jl, hosts, hl, out, sizeof out,
                                        &err);
  if (st != GF_OK) {
    if ((st != GF_EFORMAT && st != GF_ENOMEM) ||
        !memchr(err.msg, '\0', sizeof err.msg))
      abort();
    return 0;
  }
  if (!memchr(out, '\0', sizeof out)) abort();
  /* a host name the file's parser refuses is fine to refuse there: only a
   * crash or an unterminated text is a bug */
  (void)gf_capacity_parse(out, strlen(out), GF_CAP_FILE, &c, &err);
  return 0;
}

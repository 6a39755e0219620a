/* config.c - ganflow-serve's command line: one table of gf/flags.h rows
 * over gfs_config, and from it the defaults, the parsing (numbers through
 * gf/parse.h, each refusal naming its flag) and --help; see gfs/server.h.
 * Nothing here opens a file or a socket. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/comm.h"
#include "gf/flags.h"
#include "gf/fs.h"
#include "gf/mlflow_env.h"
#include "gf/parse.h"
#include "gf/sock.h"
#include "gf/text.h"
#include "gfs/request.h"
#include "gfs/server.h"
#include "gfs/slot.h"

_Static_assert(sizeof(size_t) == sizeof(uint64_t),
               "--max-body is read as a U64 row into a size_t");

/* --model URI (repeatable, borrowed from argv). */
static gf_status model_arg(const gf_flag *row, void *obj, const char *v,
                           gf_err *err) {
  gfs_config *c = obj;
  if (c->n_models >= GFS_MAX_MODELS)
    return gf_fail(err, GF_EINVAL, "%s: at most %d", row->name,
                   GFS_MAX_MODELS);
  if (strncmp(v, "models:/", 8) != 0)
    return gf_fail(err, GF_EINVAL, "%s: expected models:/NAME@ALIAS or "
                   "models:/NAME/VERSION, got '%s'", row->name, v);
  c->models[c->n_models++] = v;
  return GF_OK;
}

/* --listen HOST:PORT, the port in [0, 65535] (0: any free port). */
static gf_status listen_arg(const gf_flag *row, void *obj, const char *v,
                            gf_err *err) {
  gfs_config *c = obj;
  return gf_sock_split(row->name, v, c->host, sizeof c->host, &c->port, err);
}

/* --device cpu|cuda[:N] ("cuda" alone: GPU 0). */
static gf_status device_arg(const gf_flag *row, void *obj, const char *v,
                            gf_err *err) {
  gfs_config *c = obj;
  int ordinal;
  GF_TRY(gf_device_parse(row->name, v, &c->backend, &ordinal, err));
  c->device_index = ordinal < 0 ? 0 : ordinal;
  return GF_OK;
}

static gf_status cache_dir_arg(const gf_flag *row, void *obj, const char *v,
                               gf_err *err) {
  GF_TRY(gfs_cache_dir_check(v, row->name, err));
  return gf_flag_copy(row, obj, v, err);
}

/* A file the server writes or reads: no longer than a path. */
static gf_status path_arg(const gf_flag *row, void *obj, const char *v,
                          gf_err *err) {
  GF_TRY(gf_path_check(row->name, v, 0, err));
  return gf_flag_copy(row, obj, v, err);
}

static const gf_flag_choice k_precisions[] = {
  {"fp32", GF_GEN_FP32}, {"bf16", GF_GEN_BF16}, {"int8", GF_GEN_INT8},
  {NULL, 0}};

#define C gfs_config
#define FIELD(f) GF_FLAG_FIELD(C, f)

static const gf_flag k_rows[] = {
  {.name = "--model", .arg = "URI", .kind = GF_FLAG_CUSTOM,
   .parse = model_arg, .def_help = "required",
   .help = "models:/NAME@ALIAS, models:/NAME/VERSION or models:/NAME/latest "
           "(repeatable, up to 16)"},
  {.name = "--listen", .arg = "HOST:PORT", .kind = GF_FLAG_CUSTOM,
   .parse = listen_arg, .def_s = "127.0.0.1:8080",
   .help = "address; port 0 = any free port"},
  {.name = "--poll", .arg = "SECONDS", .kind = GF_FLAG_F64, FIELD(poll_s),
   .flo = 0, .fhi = 86400, .def_f = 10,
   .help = "registry poll period; 0 = load once"},
  {.name = "--cache-dir", .arg = "DIR", .kind = GF_FLAG_ARG,
   FIELD(cache_dir), .parse = cache_dir_arg,
   .def_help = "~/.cache/ganflow-serve", .help = "download cache"},
  {.name = "--device", .arg = "DEV", .kind = GF_FLAG_CUSTOM,
   .parse = device_arg, .def_s = "cpu", .help = "cpu or cuda[:N]"},
  {.name = "--max-images", .arg = "N", .kind = GF_FLAG_INT,
   FIELD(max_images), .lo = 1, .hi = 1024, .def_i = 64,
   .help = "images per request"},
  {.name = "--token-file", .arg = "FILE", .kind = GF_FLAG_ARG,
   FIELD(token_file), .parse = path_arg, .def_help = "none",
   .help = "require 'Authorization: Bearer TOKEN' (the file's first line) "
           "except on health probes"},
  {.name = "--workers", .arg = "N", .kind = GF_FLAG_INT, FIELD(workers),
   .lo = 1, .hi = 64, .def_i = 2, .help = "generation threads"},
  {.name = "--threads", .arg = "N", .kind = GF_FLAG_INT, FIELD(threads),
   .lo = 1, .hi = 256, .def_i = 1, .help = "op threads per worker"},
  {.name = "--preferred-batch", .arg = "B", .kind = GF_FLAG_INT,
   FIELD(preferred_batch), .lo = 1, .hi = GFS_MAX_PASS_ROWS, .def_i = 16,
   .help = "rows of one generator pass: queued requests for one model share "
           "passes of up to B rows; a seed's bytes are the same whatever it "
           "shares"},
  {.name = "--max-queue-delay-us", .arg = "D", .kind = GF_FLAG_INT,
   FIELD(max_queue_delay_us), .lo = 0, .hi = 1000000, .def_i = 500,
   .help = "a pass short of B rows waits up to D microseconds for more "
           "while others run; 0: never waits"},
  {.name = "--precision", .arg = "P", .kind = GF_FLAG_CHOICE,
   FIELD(precision), .choices = k_precisions, .def_i = GF_GEN_FP32,
   .help = "fp32, bf16 (convolutions in bfloat16, f32 sums; needs "
           "AVX512_BF16 or AMX) or int8 (convolutions after the first in "
           "int8, calibrated at load; needs AVX512_VNNI or AMX); refused "
           "elsewhere"},
  {.name = "--queue", .arg = "N", .kind = GF_FLAG_INT, FIELD(queue),
   .lo = 0, .hi = 100000, .def_i = 64,
   .help = "jobs waiting beyond the running ones before 429"},
  {.name = "--max-body", .arg = "BYTES", .kind = GF_FLAG_U64,
   FIELD(max_body), .ulo = 1024, .uhi = 1u << 30, .def_u = 1u << 20,
   .help = "request body limit"},
  {.name = "--deadline", .arg = "SECONDS", .kind = GF_FLAG_F64,
   FIELD(deadline_s), .flo = 0.001, .fhi = 3600, .def_f = 10,
   .help = "longest wait for a worker"},
  {.name = "--conn-timeout", .arg = "SECONDS", .kind = GF_FLAG_INT,
   FIELD(conn_timeout_s), .lo = 1, .hi = 3600, .def_i = 10,
   .help = "drop idle or half-sent requests"},
  {.name = "--max-conns", .arg = "N", .kind = GF_FLAG_INT, FIELD(max_conns),
   .lo = 1, .hi = 65536, .def_i = 512, .help = "open connections"},
  {.name = "--port-file", .arg = "FILE", .kind = GF_FLAG_ARG,
   FIELD(port_file), .parse = path_arg, .def_help = "none",
   .help = "write the bound port there"},
};

#undef FIELD
#undef C

static const gf_flag_table k_table =
    GF_FLAG_TABLE(k_rows, NULL, 1, 23);

const gf_flag_table *gfs_flags(void) { return &k_table; }

void gfs_config_default(gfs_config *c) {
  memset(c, 0, sizeof *c);
  gf_flags_defaults(&k_table, c); /* cache_dir stays NULL: the server's */
}

void gfs_usage(FILE *out) {
  fprintf(out,
          "usage: ganflow-serve --model URI [--model URI ...] [options]\n"
          "\n"
          "Serves registered ganflow generators over HTTP and follows their\n"
          "aliases in the MLflow registry (MLFLOW_TRACKING_URI).\n"
          "\n");
  gf_flags_usage(out, &k_table);
  fprintf(out, "Numbers are plain decimals (no spaces, '+' or hex).\n");
}

gf_status gfs_config_parse_args(gfs_config *c, int argc, char **argv,
                                int *help, gf_err *err) {
  gfs_config_default(c);
  bool h = false;
  *help = 0;
  GF_TRY(gf_flags_parse(&k_table, c, argc, argv, NULL, &h, NULL, err));
  if (h) {
    *help = 1;
    return GF_OK;
  }
  if (c->n_models == 0)
    return gf_fail(err, GF_EINVAL, "--model: at least one is required");
  return gf_mlflow_env_check(gf_launch_getenv, NULL, err);
}

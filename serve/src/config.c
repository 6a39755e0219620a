/* config.c - ganflow-serve's defaults and command line; see gfs/server.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/fs.h"
#include "gf/text.h"
#include "gfs/request.h"
#include "gfs/server.h"
#include "gfs/slot.h"

void gfs_config_default(gfs_config *c) {
  static const char host[] = "127.0.0.1";
  _Static_assert(sizeof host <= sizeof c->host, "the default host fits");
  memset(c, 0, sizeof *c);
  memcpy(c->host, host, sizeof host);
  c->port = 8080;
  c->poll_s = 10;
  c->cache_dir = NULL; /* resolved by the server: see gfs_config_default */
  c->backend = GF_BACKEND_CPU;
  c->max_images = 64;
  c->preferred_batch = 16;
  c->max_queue_delay_us = 500;
  c->workers = 2;
  c->threads = 1;
  c->queue = 64;
  c->max_body = 1u << 20;
  c->deadline_s = 10;
  c->conn_timeout_s = 10;
  c->max_conns = 512;
}

const char *gfs_usage(void) {
  return "usage: ganflow-serve --model URI [--model URI ...] [options]\n"
         "\n"
         "Serves registered ganflow generators over HTTP and follows their\n"
         "aliases in the MLflow registry (MLFLOW_TRACKING_URI).\n"
         "\n"
         "  --model URI          models:/NAME@ALIAS, models:/NAME/VERSION or\n"
         "                       models:/NAME/latest (repeatable, up to 16)\n"
         "  --listen HOST:PORT   address (default 127.0.0.1:8080; port 0 =\n"
         "                       any free port)\n"
         "  --poll SECONDS       registry poll period (default 10; 0 = load\n"
         "                       once)\n"
         "  --cache-dir DIR      download cache (default\n"
         "                       ~/.cache/ganflow-serve)\n"
         "  --device DEV         cpu or cuda[:N] (default cpu)\n"
         "  --max-images N       images per request (default 64)\n"
         "  --token-file FILE    require 'Authorization: Bearer TOKEN' (the\n"
         "                       file's first line) except on health probes\n"
         "  --workers N          generation threads (default 2)\n"
         "  --threads N          op threads per worker (default 1)\n"
         "  --preferred-batch B  rows of one generator pass: queued requests\n"
         "                       for one model share passes of up to B rows\n"
         "                       (default 16, 1..64); a seed's bytes are the\n"
         "                       same whatever it shares\n"
         "  --max-queue-delay-us D  a pass short of B rows waits up to D\n"
         "                       microseconds for more while others run\n"
         "                       (default 500; 0: never waits)\n"
         "  --precision P        fp32 (default), bf16 (convolutions in\n"
         "                       bfloat16, f32 sums; needs AVX512_BF16 or\n"
         "                       AMX) or int8 (convolutions after the first\n"
         "                       in int8, calibrated at load; needs\n"
         "                       AVX512_VNNI or AMX); refused elsewhere\n"
         "  --queue N            jobs waiting beyond the running ones before\n"
         "                       429 (default 64)\n"
         "  --max-body BYTES     request body limit (default 1048576)\n"
         "  --deadline SECONDS   longest wait for a worker (default 10)\n"
         "  --conn-timeout SECONDS  drop idle or half-sent requests\n"
         "                       (default 10)\n"
         "  --max-conns N        open connections (default 512)\n"
         "  --port-file FILE     write the bound port there\n"
         "  --help               this text\n";
}

static gf_status int_arg(const char *flag, const char *v, long lo, long hi,
                         long *out, gf_err *err) {
  int64_t x;
  if (gfs_parse_i64(v, &x) != 0 || x < lo || x > hi)
    return gf_fail(err, GF_EINVAL, "%s: expected an integer %ld..%ld, got "
                   "'%s'", flag, lo, hi, v);
  *out = (long)x;
  return GF_OK;
}

static gf_status num_arg(const char *flag, const char *v, double lo,
                         double hi, double *out, gf_err *err) {
  char *end = NULL;
  double x = strtod(v, &end);
  if (!*v || !end || *end || !(x >= lo && x <= hi))
    return gf_fail(err, GF_EINVAL, "%s: expected a number %g..%g, got '%s'",
                   flag, lo, hi, v);
  *out = x;
  return GF_OK;
}

static gf_status listen_arg(gfs_config *c, const char *v, gf_err *err) {
  const char *colon = strrchr(v, ':');
  if (!colon || colon == v || (size_t)(colon - v) >= sizeof c->host)
    return gf_fail(err, GF_EINVAL, "--listen: expected HOST:PORT, got '%s'",
                   v);
  long port = 0;
  gf_status st = int_arg("--listen", colon + 1, 0, 65535, &port, err);
  if (st) return st;
  memcpy(c->host, v, (size_t)(colon - v));
  c->host[colon - v] = '\0';
  c->port = (int)port;
  return GF_OK;
}

static gf_status device_arg(gfs_config *c, const char *v, gf_err *err) {
  if (strcmp(v, "cpu") == 0) {
    c->backend = GF_BACKEND_CPU;
    return GF_OK;
  }
  if (strncmp(v, "cuda", 4) == 0 && (v[4] == '\0' || v[4] == ':')) {
    long idx = 0;
    if (v[4] == ':') {
      gf_status st = int_arg("--device", v + 5, 0, 63, &idx, err);
      if (st) return st;
    }
    c->backend = GF_BACKEND_CUDA;
    c->device_index = (int)idx;
    return GF_OK;
  }
  return gf_fail(err, GF_EINVAL, "--device: expected cpu or cuda[:N], got "
                 "'%s'", v);
}

gf_status gfs_config_parse_args(gfs_config *c, int argc, char **argv,
                                int *help, gf_err *err) {
  gfs_config_default(c);
  *help = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      *help = 1;
      return GF_OK;
    }
    if (strncmp(a, "--", 2) != 0)
      return gf_fail(err, GF_EINVAL, "unexpected argument '%s'", a);
    char flag[64];
    const char *v, *eq = strchr(a, '=');
    if (eq) {
      if ((size_t)(eq - a) >= sizeof flag)
        return gf_fail(err, GF_EINVAL, "unknown flag '%s'", a);
      memcpy(flag, a, (size_t)(eq - a));
      flag[eq - a] = '\0';
      v = eq + 1;
    } else {
      if (!gf_fits(snprintf(flag, sizeof flag, "%s", a), sizeof flag))
        return gf_fail(err, GF_EINVAL, "unknown flag '%.100s...'", a);
      if (i + 1 >= argc)
        return gf_fail(err, GF_EINVAL, "%s: missing value", flag);
      v = argv[++i];
    }
    long x = 0;
    gf_status st = GF_OK;
    if (strcmp(flag, "--model") == 0) {
      if (c->n_models >= GFS_MAX_MODELS)
        return gf_fail(err, GF_EINVAL, "--model: at most %d", GFS_MAX_MODELS);
      if (strncmp(v, "models:/", 8) != 0)
        return gf_fail(err, GF_EINVAL, "--model: expected models:/NAME@ALIAS "
                       "or models:/NAME/VERSION, got '%s'", v);
      c->models[c->n_models++] = v;
    } else if (strcmp(flag, "--listen") == 0) {
      st = listen_arg(c, v, err);
    } else if (strcmp(flag, "--poll") == 0) {
      st = num_arg(flag, v, 0, 86400, &c->poll_s, err);
    } else if (strcmp(flag, "--cache-dir") == 0) {
      if (!(st = gfs_cache_dir_check(v, "--cache-dir", err))) c->cache_dir = v;
    } else if (strcmp(flag, "--device") == 0) {
      st = device_arg(c, v, err);
    } else if (strcmp(flag, "--max-images") == 0) {
      if (!(st = int_arg(flag, v, 1, 1024, &x, err))) c->max_images = (int)x;
    } else if (strcmp(flag, "--token-file") == 0) {
      if (!(st = gf_path_check(flag, v, 0, err))) c->token_file = v;
    } else if (strcmp(flag, "--workers") == 0) {
      if (!(st = int_arg(flag, v, 1, 64, &x, err))) c->workers = (int)x;
    } else if (strcmp(flag, "--threads") == 0) {
      if (!(st = int_arg(flag, v, 1, 256, &x, err))) c->threads = (int)x;
    } else if (strcmp(flag, "--preferred-batch") == 0) {
      if (!(st = int_arg(flag, v, 1, GFS_MAX_PASS_ROWS, &x, err)))
        c->preferred_batch = (int)x;
    } else if (strcmp(flag, "--precision") == 0) {
      if (strcmp(v, "fp32") == 0) c->precision = GF_GEN_FP32;
      else if (strcmp(v, "bf16") == 0) c->precision = GF_GEN_BF16;
      else if (strcmp(v, "int8") == 0) c->precision = GF_GEN_INT8;
      else st = gf_fail(err, GF_EINVAL, "--precision: fp32, bf16 or int8, "
                        "not '%s'", v);
    } else if (strcmp(flag, "--max-queue-delay-us") == 0) {
      if (!(st = int_arg(flag, v, 0, 1000000, &x, err)))
        c->max_queue_delay_us = (int)x;
    } else if (strcmp(flag, "--queue") == 0) {
      if (!(st = int_arg(flag, v, 0, 100000, &x, err))) c->queue = (int)x;
    } else if (strcmp(flag, "--max-body") == 0) {
      if (!(st = int_arg(flag, v, 1024, 1L << 30, &x, err)))
        c->max_body = (size_t)x;
    } else if (strcmp(flag, "--deadline") == 0) {
      st = num_arg(flag, v, 0.001, 3600, &c->deadline_s, err);
    } else if (strcmp(flag, "--conn-timeout") == 0) {
      if (!(st = int_arg(flag, v, 1, 3600, &x, err)))
        c->conn_timeout_s = (unsigned)x;
    } else if (strcmp(flag, "--max-conns") == 0) {
      if (!(st = int_arg(flag, v, 1, 65536, &x, err)))
        c->max_conns = (unsigned)x;
    } else if (strcmp(flag, "--port-file") == 0) {
      if (!(st = gf_path_check(flag, v, 0, err))) c->port_file = v;
    } else {
      return gf_fail(err, GF_EINVAL, "unknown flag '%s'", flag);
    }
    if (st) return st;
  }
  if (c->n_models == 0)
    return gf_fail(err, GF_EINVAL, "--model: at least one is required");
  return GF_OK;
}

/* soak_load.c - the load side of bench/serve/soak.sh: N requests over C
 * connections to one ganflow-serve model, a share of them hostile, with
 * health probes on a connection of their own, and a line per second.
 *
 *   soak_load --url http://HOST:PORT --model NAME [--requests N (100000)]
 *             [--conns C (64)] [--hostile-pct P (5)] [--rate R (0: no cap)]
 *             [--probe-ms MS (200)] [--pid PID] [--csv FILE]
 *
 * Valid requests (each checked): GET /v1/models/NAME/generate?seed=S&n=1
 * (4 in 5: 200, image/png, a PNG signature, an X-Model-Version header) and
 * POST /v2/models/NAME/infer with a JSON seed (1 in 5: 200, a JSON body
 * naming the model's version). Hostile ones (each expects a 4xx and a
 * server that goes on): bad and huge query values, an unknown model, a path
 * with "..", malformed and oversized JSON bodies, a body over --max-body,
 * a wrong method, a wrong Content-Type. Probes: GET /v2/health/ready every
 * --probe-ms, each must be 200 within one second.
 *
 * Per second (stdout and --csv): valid ok/failed, hostile 4xx/other,
 * probes ok/failed and their slowest, the versions that answered, and the
 * server's VmRSS when --pid is given. Exit 0 only when every valid request
 * and every probe succeeded and every hostile one got a 4xx. */
#include <curl/curl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_CONNS 1024
#define MAX_VERSIONS 16

typedef enum kind { K_PNG, K_V2, K_HOSTILE, K_PROBE } kind;

typedef struct conn {
  CURL *h;
  kind k;
  int hostile_id;
  char url[512];
  char *body;        /* request body, owned (hostile ones may be big) */
  size_t body_len;
  char *resp;        /* response body, grown with realloc, owned */
  size_t resp_len, resp_cap;
  char version[32];  /* X-Model-Version of the answer */
  double t0;
  struct curl_slist *hdrs;
} conn;

typedef struct tally {
  unsigned long valid_ok, valid_fail, hostile_4xx, hostile_other;
  unsigned long probe_ok, probe_fail;
  double probe_max_ms;
  char versions[MAX_VERSIONS][32];
  unsigned long version_n[MAX_VERSIONS];
  int n_versions;
} tally;

typedef struct opts {
  const char *url, *model, *csv;
  long requests;
  int conns, hostile_pct, probe_ms;
  double rate;
  long pid;
} opts;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* splitmix64: the load's own choices (seeds, which requests are hostile). */
static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static size_t on_body(char *p, size_t sz, size_t n, void *user) {
  conn *c = user;
  size_t len = sz * n;
  if (c->resp_len + len + 1 > c->resp_cap) {
    size_t cap = c->resp_cap ? c->resp_cap : 4096;
    while (cap < c->resp_len + len + 1) cap *= 2;
    char *q = realloc(c->resp, cap);
    if (!q) return 0; /* curl reports a write error: the request fails */
    c->resp = q;
    c->resp_cap = cap;
  }
  memcpy(c->resp + c->resp_len, p, len);
  c->resp_len += len;
  c->resp[c->resp_len] = '\0';
  return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *user) {
  conn *c = user;
  size_t len = sz * n;
  static const char key[] = "x-model-version:";
  if (len > sizeof key - 1 && strncasecmp(p, key, sizeof key - 1) == 0) {
    const char *v = p + sizeof key - 1;
    while (*v == ' ') v++;
    size_t k = 0;
    while (v + k < p + len && v[k] != '\r' && v[k] != '\n' &&
           k + 1 < sizeof c->version) {
      c->version[k] = v[k];
      k++;
    }
    c->version[k] = '\0';
  }
  return len;
}

static void count_version(tally *t, const char *v) {
  for (int i = 0; i < t->n_versions; i++)
    if (strcmp(t->versions[i], v) == 0) {
      t->version_n[i]++;
      return;
    }
  if (t->n_versions < MAX_VERSIONS) {
    snprintf(t->versions[t->n_versions], sizeof t->versions[0], "%s", v);
    t->version_n[t->n_versions++] = 1;
  }
}

#define N_HOSTILE 11
static const char *hostile_name[N_HOSTILE] = {
    "bad seed", "n too big", "n zero", "unknown model", "dotdot path",
    "bad json", "json wrong types", "body over max", "wrong method",
    "wrong content-type", "huge z shape"};

/* Sets c up for its next request (kind k, seed s). Returns 0, or -1 when
 * out of memory. */
static int prepare(conn *c, const opts *o, kind k, int hostile_id,
                   uint64_t seed) {
  CURL *h = c->h;
  curl_easy_reset(h);
  free(c->body);
  c->body = NULL;
  c->body_len = 0;
  curl_slist_free_all(c->hdrs);
  c->hdrs = NULL;
  c->resp_len = 0;
  c->version[0] = '\0';
  c->k = k;
  c->hostile_id = hostile_id;
  const char *method = NULL;
  if (k == K_PROBE) {
    snprintf(c->url, sizeof c->url, "%s/v2/health/ready", o->url);
  } else if (k == K_PNG) {
    snprintf(c->url, sizeof c->url, "%s/v1/models/%s/generate?seed=%llu&n=1",
             o->url, o->model, (unsigned long long)seed);
  } else if (k == K_V2) {
    snprintf(c->url, sizeof c->url, "%s/v2/models/%s/infer", o->url,
             o->model);
    c->body = malloc(160);
    if (!c->body) return -1;
    c->body_len = (size_t)snprintf(
        c->body, 160,
        "{\"inputs\": [{\"name\": \"seed\", \"datatype\": \"INT64\", "
        "\"shape\": [1], \"data\": [%llu]}]}",
        (unsigned long long)(seed >> 12));
    c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
  } else {
    const char *ctype = "Content-Type: application/json";
    switch (hostile_id) {
      case 0:
        snprintf(c->url, sizeof c->url,
                 "%s/v1/models/%s/generate?seed=12x&n=1", o->url, o->model);
        break;
      case 1:
        snprintf(c->url, sizeof c->url,
                 "%s/v1/models/%s/generate?seed=1&n=100000000", o->url,
                 o->model);
        break;
      case 2:
        snprintf(c->url, sizeof c->url, "%s/v1/models/%s/generate?n=0",
                 o->url, o->model);
        break;
      case 3:
        snprintf(c->url, sizeof c->url,
                 "%s/v1/models/no-such-model/generate?seed=1", o->url);
        break;
      case 4:
        snprintf(c->url, sizeof c->url,
                 "%s/v1/models/..%%2F..%%2Fetc%%2Fpasswd/generate", o->url);
        curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
        break;
      default:
        snprintf(c->url, sizeof c->url, "%s/v2/models/%s/infer", o->url,
                 o->model);
    }
    if (hostile_id == 5) c->body = strdup("{\"inputs\": [{\"name\": \"seed\"");
    if (hostile_id == 6)
      c->body = strdup("{\"inputs\": [{\"name\": 7, \"shape\": \"x\", "
                       "\"datatype\": null, \"data\": {}}]}");
    if (hostile_id == 7) { /* 2 MiB: over the default --max-body */
      c->body_len = (size_t)2 << 20;
      c->body = malloc(c->body_len + 1);
      if (c->body) {
        memset(c->body, ' ', c->body_len);
        c->body[0] = '{';
        c->body[c->body_len - 1] = '}';
        c->body[c->body_len] = '\0';
      }
    }
    if (hostile_id == 8) method = "DELETE";
    if (hostile_id == 9) {
      c->body = strdup("seed=1");
      ctype = "Content-Type: text/html";
    }
    if (hostile_id == 10)
      c->body = strdup("{\"inputs\": [{\"name\": \"z\", \"datatype\": "
                       "\"FP32\", \"shape\": [1073741824, 100], \"data\": "
                       "[0]}]}");
    if (hostile_id >= 5 && hostile_id != 8 && !c->body) return -1;
    if (c->body && !c->body_len) c->body_len = strlen(c->body);
    c->hdrs = curl_slist_append(NULL, ctype);
  }
  curl_easy_setopt(h, CURLOPT_URL, c->url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
  curl_easy_setopt(h, CURLOPT_PRIVATE, c);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, k == K_PROBE ? 1000L : 30000L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  if (c->hdrs) curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->hdrs);
  if (c->body) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
  }
  if (method) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  c->t0 = now_s();
  return 0;
}

/* Judges c's finished request into t; prints the first failures. */
static void judge(conn *c, CURLcode rc, tally *t, unsigned long *shown) {
  long status = 0;
  curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
  int ok;
  const char *why = "";
  if (c->k == K_PROBE) {
    double ms = (now_s() - c->t0) * 1e3;
    ok = rc == CURLE_OK && status == 200;
    if (ok) t->probe_ok++;
    else t->probe_fail++;
    if (ms > t->probe_max_ms) t->probe_max_ms = ms;
    why = "probe";
  } else if (c->k == K_HOSTILE) {
    ok = rc == CURLE_OK && status >= 400 && status < 500;
    /* A body over the limit may be refused before curl has sent it all:
     * the 413 then arrives on a connection the server closes. */
    if (!ok && c->hostile_id == 7 && rc == CURLE_SEND_ERROR) ok = 1;
    if (ok) t->hostile_4xx++;
    else t->hostile_other++;
    why = hostile_name[c->hostile_id];
  } else {
    ok = rc == CURLE_OK && status == 200 && c->version[0];
    if (ok && c->k == K_PNG)
      ok = c->resp_len > 8 && memcmp(c->resp, "\x89PNG\r\n\x1a\n", 8) == 0;
    if (ok && c->k == K_V2)
      ok = c->resp_len > 0 && strstr(c->resp, "\"model_version\"") != NULL;
    if (ok) {
      t->valid_ok++;
      count_version(t, c->version);
    } else {
      t->valid_fail++;
    }
    why = c->k == K_PNG ? "png" : "v2";
  }
  if (!ok && (*shown)++ < 20)
    fprintf(stderr, "soak_load: %s request %s failed: curl %d (%s), HTTP %ld: %.200s\n",
            why, c->url, (int)rc, curl_easy_strerror(rc), status,
            c->resp ? c->resp : "");
}

static long rss_kb(long pid) {
  if (pid <= 0) return -1;
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%ld/status", pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) kb = strtol(line + 6, NULL, 10);
  fclose(f);
  return kb;
}

static void report(FILE *out, FILE *csv, double t, const tally *s, long rss) {
  char vs[256] = "";
  size_t at = 0;
  for (int i = 0; i < s->n_versions && at < sizeof vs - 40; i++)
    at += (size_t)snprintf(vs + at, sizeof vs - at, "%sv%s:%lu",
                           i ? ";" : "", s->versions[i], s->version_n[i]);
  fprintf(out,
          "t=%5.0fs valid %6lu ok %lu failed, hostile %4lu 4xx %lu other, "
          "probes %3lu ok %lu failed (max %.1f ms), versions %s, rss %ld kB\n",
          t, s->valid_ok, s->valid_fail, s->hostile_4xx, s->hostile_other,
          s->probe_ok, s->probe_fail, s->probe_max_ms, vs[0] ? vs : "-", rss);
  if (csv)
    fprintf(csv, "%.0f,%lu,%lu,%lu,%lu,%lu,%lu,%.2f,%s,%ld\n", t, s->valid_ok,
            s->valid_fail, s->hostile_4xx, s->hostile_other, s->probe_ok,
            s->probe_fail, s->probe_max_ms, vs, rss);
  fflush(out);
  if (csv) fflush(csv);
}

static void add_tally(tally *a, const tally *b) {
  a->valid_ok += b->valid_ok;
  a->valid_fail += b->valid_fail;
  a->hostile_4xx += b->hostile_4xx;
  a->hostile_other += b->hostile_other;
  a->probe_ok += b->probe_ok;
  a->probe_fail += b->probe_fail;
  if (b->probe_max_ms > a->probe_max_ms) a->probe_max_ms = b->probe_max_ms;
  for (int i = 0; i < b->n_versions; i++)
    for (unsigned long k = 0; k < b->version_n[i]; k++)
      count_version(a, b->versions[i]);
}

static int usage(void) {
  fprintf(stderr,
          "usage: soak_load --url http://HOST:PORT --model NAME [--requests N]\n"
          "                 [--conns C] [--hostile-pct P] [--rate R] "
          "[--probe-ms MS]\n"
          "                 [--pid PID] [--csv FILE]\n");
  return 2;
}

static int parse_opts(int argc, char **argv, opts *o) {
  *o = (opts){.requests = 100000, .conns = 64, .hostile_pct = 5,
              .probe_ms = 200};
  /* Flags come in pairs: FLAG VALUE. */
  for (int i = 1; i < argc; i += 2) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return -1;
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    int num = errno == 0 && end != v && *end == '\0';
    if (strcmp(f, "--url") == 0) o->url = v;
    else if (strcmp(f, "--model") == 0) o->model = v;
    else if (strcmp(f, "--csv") == 0) o->csv = v;
    else if (!num) return -1;
    else if (strcmp(f, "--requests") == 0 && x >= 1) o->requests = (long)x;
    else if (strcmp(f, "--conns") == 0 && x >= 1 && x <= MAX_CONNS) o->conns = (int)x;
    else if (strcmp(f, "--hostile-pct") == 0 && x >= 0 && x <= 100) o->hostile_pct = (int)x;
    else if (strcmp(f, "--rate") == 0 && x >= 0) o->rate = x;
    else if (strcmp(f, "--probe-ms") == 0 && x >= 10) o->probe_ms = (int)x;
    else if (strcmp(f, "--pid") == 0 && x > 0) o->pid = (long)x;
    else return -1;
  }
  return o->url && o->model ? 0 : -1;
}

int main(int argc, char **argv) {
  opts o;
  if (parse_opts(argc, argv, &o) != 0) return usage();
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
    fprintf(stderr, "soak_load: curl_global_init failed\n");
    return 1;
  }
  FILE *csv = NULL;
  if (o.csv && !(csv = fopen(o.csv, "w"))) {
    fprintf(stderr, "soak_load: %s: %s\n", o.csv, strerror(errno));
    return 1;
  }
  if (csv)
    fprintf(csv, "t_s,valid_ok,valid_failed,hostile_4xx,hostile_other,"
                 "probes_ok,probes_failed,probe_max_ms,versions,rss_kb\n");
  CURLM *multi = curl_multi_init();
  conn *cs = calloc((size_t)o.conns + 1, sizeof *cs);
  if (!multi || !cs) {
    fprintf(stderr, "soak_load: out of memory\n");
    return 1;
  }
  curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)o.conns + 1);
  for (int i = 0; i <= o.conns; i++)
    if (!(cs[i].h = curl_easy_init())) {
      fprintf(stderr, "soak_load: curl_easy_init failed\n");
      return 1;
    }
  conn *probe = &cs[o.conns];
  int probe_busy = 0;
  long issued = 0, done = 0;
  uint64_t rng = 0x5eed;
  tally sec = {0}, all = {0};
  unsigned long shown = 0;
  double t0 = now_s(), next_probe = t0, next_report = t0 + 1.0;
  int free_list[MAX_CONNS], n_free = 0;
  for (int i = 0; i < o.conns; i++) free_list[n_free++] = i;
  int rc = 0;
  while (done < o.requests) {
    double t = now_s();
    /* Start requests on idle connections, under the rate cap. */
    while (n_free > 0 && issued < o.requests &&
           (o.rate <= 0 || issued < (long)((t - t0) * o.rate) + 1)) {
      conn *c = &cs[free_list[--n_free]];
      uint64_t r = next_u64(&rng);
      kind k;
      int hid = 0;
      if ((int)(r % 100) < o.hostile_pct) {
        k = K_HOSTILE;
        hid = (int)((r >> 8) % N_HOSTILE);
      } else {
        k = (r >> 20) % 5 == 0 ? K_V2 : K_PNG;
      }
      if (prepare(c, &o, k, hid, next_u64(&rng) >> 1) != 0) {
        fprintf(stderr, "soak_load: out of memory\n");
        return 1;
      }
      curl_multi_add_handle(multi, c->h);
      issued++;
    }
    if (!probe_busy && t >= next_probe) {
      if (prepare(probe, &o, K_PROBE, 0, 0) != 0) return 1;
      curl_multi_add_handle(multi, probe->h);
      probe_busy = 1;
      next_probe = t + o.probe_ms / 1e3;
    }
    int running = 0;
    curl_multi_perform(multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(multi, &left))) {
      if (m->msg != CURLMSG_DONE) continue;
      conn *c = NULL;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
      CURLcode res = m->data.result;
      curl_multi_remove_handle(multi, m->easy_handle);
      judge(c, res, &sec, &shown);
      if (c == probe) {
        probe_busy = 0;
      } else {
        free_list[n_free++] = (int)(c - cs);
        done++;
      }
    }
    t = now_s();
    if (t >= next_report) {
      report(stdout, csv, t - t0, &sec, rss_kb(o.pid));
      add_tally(&all, &sec);
      memset(&sec, 0, sizeof sec);
      next_report += 1.0;
    }
    int wait_ms = 5;
    if (o.rate > 0 && n_free > 0) wait_ms = 1;
    curl_multi_poll(multi, NULL, 0, wait_ms, NULL);
  }
  if (probe_busy) curl_multi_remove_handle(multi, probe->h);
  report(stdout, csv, now_s() - t0, &sec, rss_kb(o.pid));
  add_tally(&all, &sec);
  double secs = now_s() - t0;
  printf("total: %ld requests in %.1f s (%.0f/s): valid %lu ok %lu failed; "
         "hostile %lu got 4xx, %lu other; probes %lu ok %lu failed, slowest "
         "%.1f ms\n",
         done, secs, done / secs, all.valid_ok, all.valid_fail,
         all.hostile_4xx, all.hostile_other, all.probe_ok, all.probe_fail,
         all.probe_max_ms);
  printf("versions answering:");
  for (int i = 0; i < all.n_versions; i++)
    printf(" v%s %lu", all.versions[i], all.version_n[i]);
  printf("\n");
  if (all.valid_fail || all.hostile_other || all.probe_fail) rc = 1;
  for (int i = 0; i <= o.conns; i++) {
    curl_easy_cleanup(cs[i].h);
    free(cs[i].body);
    free(cs[i].resp);
    curl_slist_free_all(cs[i].hdrs);
  }
  free(cs);
  curl_multi_cleanup(multi);
  if (csv) fclose(csv);
  curl_global_cleanup();
  return rc;
}

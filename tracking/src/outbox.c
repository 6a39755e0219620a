/* outbox.c - append, decode and replay of the outbox file; see outbox.h. */
#include "outbox.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static void put_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static int fsync_parent(const char *path) {
  char *copy = strdup(path);
  if (!copy) return -1;
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
  free(copy);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

mlflow_status mlflow_outbox_append(const char *path, const char *payload,
                                   size_t len, uint32_t points,
                                   mlflow_error *err) {
  if (len > MLFLOW_OUTBOX_MAX_PAYLOAD)
    return mlflow_fail(err, MLFLOW_E_INVALID, "outbox record too large");
  struct stat sb;
  int is_new = stat(path, &sb) != 0;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return mlflow_fail(err, MLFLOW_E_IO, "cannot open outbox %s: %s", path,
                       strerror(errno));
  uint8_t *rec = malloc(MLFLOW_OUTBOX_HEADER + len);
  if (!rec) {
    close(fd);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  memcpy(rec, "GFOB", 4);
  put_u32(rec + 4, (uint32_t)len);
  put_u32(rec + 8, points);
  put_u32(rec + 12, (uint32_t)crc32(0L, (const Bytef *)payload, (uInt)len));
  memcpy(rec + MLFLOW_OUTBOX_HEADER, payload, len);
  size_t total = MLFLOW_OUTBOX_HEADER + len, off = 0;
  mlflow_status st = MLFLOW_OK;
  while (off < total) {
    ssize_t w = write(fd, rec + off, total - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      st = mlflow_fail(err, MLFLOW_E_IO, "cannot write outbox %s: %s", path,
                       strerror(errno));
      break;
    }
    off += (size_t)w;
  }
  if (st == MLFLOW_OK && fsync(fd) != 0)
    st = mlflow_fail(err, MLFLOW_E_IO, "cannot fsync outbox %s: %s", path,
                     strerror(errno));
  close(fd);
  free(rec);
  if (st == MLFLOW_OK && is_new && fsync_parent(path) != 0)
    st = mlflow_fail(err, MLFLOW_E_IO, "cannot fsync the directory of %s",
                     path);
  return st;
}

int mlflow_outbox_decode(const uint8_t *buf, size_t len, const char **payload,
                         size_t *plen, uint32_t *points, size_t *consumed) {
  if (len < MLFLOW_OUTBOX_HEADER) {
    /* A shorter tail must still look like the start of a record. */
    size_t k = len < 4 ? len : 4;
    return memcmp(buf, "GFOB", k) == 0 ? 0 : -1;
  }
  if (memcmp(buf, "GFOB", 4) != 0) return -1;
  uint32_t n = get_u32(buf + 4);
  if (n > MLFLOW_OUTBOX_MAX_PAYLOAD) return -1;
  if (len - MLFLOW_OUTBOX_HEADER < n) return 0;
  const uint8_t *p = buf + MLFLOW_OUTBOX_HEADER;
  if ((uint32_t)crc32(0L, p, n) != get_u32(buf + 12)) return -1;
  *payload = (const char *)p;
  *plen = n;
  *points = get_u32(buf + 8);
  *consumed = MLFLOW_OUTBOX_HEADER + n;
  return 1;
}

/* Reads the whole file into memory. */
static mlflow_status read_file(const char *path, uint8_t **data, size_t *len,
                               mlflow_error *err) {
  *data = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return MLFLOW_E_NOT_FOUND;
    return mlflow_fail(err, MLFLOW_E_IO, "cannot open outbox %s: %s", path,
                       strerror(errno));
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    close(fd);
    return mlflow_fail(err, MLFLOW_E_IO, "cannot stat %s", path);
  }
  size_t n = (size_t)sb.st_size;
  uint8_t *b = malloc(n ? n : 1);
  if (!b) {
    close(fd);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "outbox %s too large for memory",
                       path);
  }
  size_t off = 0;
  while (off < n) {
    ssize_t r = read(fd, b + off, n - off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    off += (size_t)r;
  }
  close(fd);
  *data = b;
  *len = off;
  return MLFLOW_OK;
}

mlflow_status mlflow_post_batch_body(mlflow_client *c, const char *body,
                                     size_t len, int max_retries,
                                     mlflow_error *err) {
  mlflow_buf url = {0};
  if (mlflow_buf_appendf(&url, "%s/api/2.0/mlflow/runs/log-batch",
                         c->cfg.tracking_uri))
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  mlflow_http_req req = {.method = "POST", .url = url.data,
                         .what = "POST runs/log-batch", .body = body,
                         .body_len = len, .max_retries = max_retries};
  mlflow_http_resp resp;
  mlflow_status st = mlflow_http_do(c, &req, &resp, err);
  mlflow_http_resp_free(&resp);
  mlflow_buf_free(&url);
  return st;
}

size_t mlflow_outbox_count(const char *path) {
  uint8_t *data;
  size_t len, n = 0, off = 0;
  if (read_file(path, &data, &len, NULL) != MLFLOW_OK) return 0;
  for (;;) {
    const char *p;
    size_t pl, used;
    uint32_t pts;
    if (mlflow_outbox_decode(data + off, len - off, &p, &pl, &pts, &used) != 1)
      break;
    off += used;
    n++;
  }
  free(data);
  return n;
}

mlflow_status mlflow_outbox_replay_from(mlflow_client *c, const char *path,
                                        off_t *offset, int max_retries,
                                        size_t *batches, uint64_t *points,
                                        mlflow_error *err) {
  uint8_t *data;
  size_t len;
  mlflow_status st = read_file(path, &data, &len, err);
  if (st == MLFLOW_E_NOT_FOUND) {
    *offset = 0;
    return MLFLOW_OK;
  }
  if (st) return st;
  size_t off = (size_t)*offset <= len ? (size_t)*offset : len;
  for (;;) {
    const char *p;
    size_t pl, used;
    uint32_t pts;
    int r = mlflow_outbox_decode(data + off, len - off, &p, &pl, &pts, &used);
    if (r == 0) break; /* end, or a torn tail nobody was told was saved */
    if (r < 0) {
      st = mlflow_fail(err, MLFLOW_E_PROTOCOL,
                       "outbox %s is corrupt at byte %zu; the records before "
                       "it were replayed, the file is kept", path, off);
      break;
    }
    st = mlflow_post_batch_body(c, p, pl, max_retries, err);
    if (st) break;
    off += used;
    *offset = (off_t)off;
    if (batches) (*batches)++;
    if (points) *points += pts;
  }
  free(data);
  if (st == MLFLOW_OK) {
    if (unlink(path) != 0 && errno != ENOENT)
      return mlflow_fail(err, MLFLOW_E_IO, "cannot remove outbox %s: %s", path,
                         strerror(errno));
    fsync_parent(path);
    *offset = 0;
  }
  return st;
}

mlflow_status mlflow_outbox_replay(mlflow_client *c, const char *path,
                                   size_t *n_batches, mlflow_error *err) {
  off_t off = 0;
  size_t n = 0;
  mlflow_status st = mlflow_outbox_replay_from(
      c, path, &off, c->cfg.max_retries, &n, NULL, err);
  if (n_batches) *n_batches = n;
  return st;
}

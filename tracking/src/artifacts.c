/* artifacts.c - run artifacts through the server's artifact proxy: URI
 * resolution, upload, listing, atomic downloads (the path check is
 * util.c's, the listing's record records.c's). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parse.h"

/* Path P of "mlflow-artifacts:/P" or "mlflow-artifacts://host:port/P". */
static mlflow_status proxy_path(const char *uri, char **out, mlflow_error *err) {
  static const char scheme[] = "mlflow-artifacts:";
  const char *p = uri + sizeof scheme - 1;
  if (p[0] == '/' && p[1] == '/') {
    p = strchr(p + 2, '/');
    if (!p) p = "";
  }
  while (*p == '/') p++;
  size_t n = strlen(p);
  while (n && p[n - 1] == '/') n--;
  char *s = strndup(p, n);
  if (!s) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  if (*s && !mlflow_path_is_safe(s)) {
    free(s);
    return mlflow_fail(err, MLFLOW_E_UNSAFE_PATH,
                       "artifact URI '%.300s' has an unsafe path", uri);
  }
  *out = s;
  return MLFLOW_OK;
}

mlflow_status mlflow_artifact_root_path(mlflow_client *c, const char *uri,
                                        char **path_out, mlflow_error *err) {
  *path_out = NULL;
  if (!uri || !*uri)
    return mlflow_fail(err, MLFLOW_E_INVALID, "empty artifact URI");
  if (!strncmp(uri, "mlflow-artifacts:", 17)) return proxy_path(uri, path_out, err);
  if (!strncmp(uri, "runs:/", 6)) {
    const char *id = uri + 6;
    while (*id == '/') id++;
    size_t idn = strcspn(id, "/");
    const char *rest = id + idn;
    while (*rest == '/') rest++;
    char *run_id = strndup(id, idn);
    if (!run_id) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    mlflow_run run;
    mlflow_status st = mlflow_run_get(c, run_id, &run, err);
    free(run_id);
    if (st) return st;
    char *root = NULL;
    if (!run.info.artifact_uri ||
        strncmp(run.info.artifact_uri, "mlflow-artifacts:", 17)) {
      st = mlflow_fail(err, MLFLOW_E_UNSUPPORTED,
                       "run artifact root '%s' is not served by the tracking "
                       "server (start it with artifact proxying)",
                       run.info.artifact_uri ? run.info.artifact_uri : "");
    } else {
      st = proxy_path(run.info.artifact_uri, &root, err);
    }
    mlflow_run_free(&run);
    if (st) return st;
    if (*rest) {
      if (!mlflow_path_is_safe(rest)) {
        free(root);
        return mlflow_fail(err, MLFLOW_E_UNSAFE_PATH,
                           "artifact URI '%.300s' has an unsafe path", uri);
      }
      mlflow_buf b = {0};
      int bad = mlflow_buf_appendf(&b, "%s%s%s", root, *root ? "/" : "", rest);
      free(root);
      if (bad) {
        mlflow_buf_free(&b);
        return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
      }
      root = b.data;
    }
    *path_out = root;
    return MLFLOW_OK;
  }
  return mlflow_fail(err, MLFLOW_E_UNSUPPORTED,
                     "artifact URI '%.300s': only mlflow-artifacts:/ and runs:/ "
                     "are supported (the server must proxy artifacts, which "
                     "is its default)", uri);
}

/* {tracking}/api/2.0/mlflow-artifacts/artifacts/<root>/<rel>, each path
 * component percent-encoded. */
static int artifact_url(mlflow_client *c, mlflow_buf *url, const char *root,
                        const char *rel) {
  if (mlflow_buf_appendf(url, "%s/api/2.0/mlflow-artifacts/artifacts",
                         c->cfg.tracking_uri))
    return -1;
  const char *parts[2] = {root, rel};
  for (int k = 0; k < 2; k++) {
    const char *p = parts[k];
    if (!p) continue;
    while (*p) {
      size_t n = strcspn(p, "/");
      if (n) {
        char *e = curl_easy_escape(NULL, p, (int)n);
        int bad = !e || mlflow_buf_appendf(url, "/%s", e);
        curl_free(e);
        if (bad) return -1;
      }
      p += n;
      if (*p == '/') p++;
    }
  }
  return 0;
}

mlflow_status mlflow_artifact_upload_file(mlflow_client *c,
                                          const char *artifact_uri,
                                          const char *local_path,
                                          const char *dest_path,
                                          mlflow_error *err) {
  if (!dest_path) {
    const char *slash = strrchr(local_path, '/');
    dest_path = slash ? slash + 1 : local_path;
  }
  if (!mlflow_path_is_safe(dest_path))
    return mlflow_fail(err, MLFLOW_E_UNSAFE_PATH,
                       "artifact path '%.300s' is not a safe relative path",
                       dest_path);
  char *root;
  mlflow_status st = mlflow_artifact_root_path(c, artifact_uri, &root, err);
  if (st) return st;
  FILE *f = fopen(local_path, "rb");
  struct stat sb;
  if (!f || fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    st = mlflow_fail(err, MLFLOW_E_IO, "cannot read %s: %s", local_path,
                     f ? "not a regular file" : strerror(errno));
    if (f) fclose(f);
    free(root);
    return st;
  }
  mlflow_buf url = {0}, what = {0};
  if (artifact_url(c, &url, root, dest_path) ||
      mlflow_buf_appendf(&what, "PUT artifact %s", dest_path)) {
    st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  } else {
    mlflow_http_req req = {.method = "PUT", .url = url.data, .what = what.data,
                           .upload = f, .upload_size = sb.st_size,
                           .max_retries = -1};
    mlflow_http_resp resp;
    st = mlflow_http_do(c, &req, &resp, err);
    mlflow_http_resp_free(&resp);
  }
  fclose(f);
  mlflow_buf_free(&url);
  mlflow_buf_free(&what);
  free(root);
  return st;
}

/* Recursion for upload_dir: local directory dir, artifact prefix rel. */
static mlflow_status upload_tree(mlflow_client *c, const char *uri,
                                 const char *dir, const char *rel, int depth,
                                 mlflow_error *err) {
  if (depth > 64)
    return mlflow_fail(err, MLFLOW_E_IO, "%s: directories nested too deep", dir);
  DIR *d = opendir(dir);
  if (!d) return mlflow_fail(err, MLFLOW_E_IO, "cannot open directory %s: %s",
                             dir, strerror(errno));
  mlflow_status st = MLFLOW_OK;
  struct dirent *e;
  while (st == MLFLOW_OK && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    mlflow_buf lp = {0}, rp = {0};
    if (mlflow_buf_appendf(&lp, "%s/%s", dir, e->d_name) ||
        mlflow_buf_appendf(&rp, "%s%s%s", rel ? rel : "", rel ? "/" : "",
                           e->d_name)) {
      st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    } else {
      struct stat sb;
      if (lstat(lp.data, &sb) != 0) {
        st = mlflow_fail(err, MLFLOW_E_IO, "cannot stat %s: %s", lp.data,
                         strerror(errno));
      } else if (S_ISDIR(sb.st_mode)) {
        st = upload_tree(c, uri, lp.data, rp.data, depth + 1, err);
      } else if (S_ISREG(sb.st_mode)) {
        st = mlflow_artifact_upload_file(c, uri, lp.data, rp.data, err);
      } /* links, sockets, devices: not artifacts */
    }
    mlflow_buf_free(&lp);
    mlflow_buf_free(&rp);
  }
  closedir(d);
  return st;
}

mlflow_status mlflow_artifact_upload_dir(mlflow_client *c,
                                         const char *artifact_uri,
                                         const char *local_dir,
                                         const char *dest_dir,
                                         mlflow_error *err) {
  if (dest_dir && !mlflow_path_is_safe(dest_dir))
    return mlflow_fail(err, MLFLOW_E_UNSAFE_PATH,
                       "artifact path '%.300s' is not a safe relative path",
                       dest_dir);
  return upload_tree(c, artifact_uri, local_dir, dest_dir, 0, err);
}

/* Lists one directory: root/sub, with result paths prefixed by prefix. */
static mlflow_status list_one(mlflow_client *c, const char *root,
                              const char *sub, mlflow_file_list *out,
                              mlflow_error *err) {
  mlflow_buf url = {0}, q = {0}, path = {0};
  mlflow_status st;
  if (mlflow_buf_appendf(&path, "%s%s%s", root, (*root && sub) ? "/" : "",
                         sub ? sub : "") ||
      mlflow_buf_appendf(&url, "%s/api/2.0/mlflow-artifacts/artifacts?",
                         c->cfg.tracking_uri) ||
      mlflow_query_add(&q, "path", path.data) ||
      mlflow_buf_append(&url, q.data, q.len)) {
    st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    goto done;
  }
  mlflow_http_req req = {.method = "GET", .url = url.data,
                         .what = "GET mlflow-artifacts/artifacts",
                         .max_retries = -1};
  mlflow_http_resp resp;
  st = mlflow_http_do(c, &req, &resp, err);
  if (st == MLFLOW_OK) {
    cJSON *j;
    st = mlflow_parse_json_object(req.what, resp.body.data, resp.body.len, &j, err);
    if (st == MLFLOW_OK) {
      mlflow_buf prefix = {0};
      if (mlflow_buf_appendf(&prefix, "%s%s", sub ? sub : "", sub ? "/" : ""))
        st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
      else
        st = mlflow_parse_file_list(j, prefix.data, out, err);
      mlflow_buf_free(&prefix);
      cJSON_Delete(j);
    }
  }
  mlflow_http_resp_free(&resp);
done:
  mlflow_buf_free(&url);
  mlflow_buf_free(&q);
  mlflow_buf_free(&path);
  return st;
}

mlflow_status mlflow_artifact_list(mlflow_client *c, const char *artifact_uri,
                                   const char *subpath, int recursive,
                                   mlflow_file_list *out, mlflow_error *err) {
  memset(out, 0, sizeof *out);
  if (subpath && !mlflow_path_is_safe(subpath))
    return mlflow_fail(err, MLFLOW_E_UNSAFE_PATH,
                       "artifact path '%.300s' is not a safe relative path",
                       subpath);
  char *root;
  mlflow_status st = mlflow_artifact_root_path(c, artifact_uri, &root, err);
  if (st) return st;
  st = list_one(c, root, subpath, out, err);
  /* Breadth-first: directories appended as we go are listed in turn. */
  for (size_t i = 0; st == MLFLOW_OK && recursive && i < out->count; i++) {
    if (!out->items[i].is_dir) continue;
    size_t depth = 1;
    for (const char *q = out->items[i].path; *q; q++) depth += *q == '/';
    if (out->count > 1000000 || depth > 64) {
      st = mlflow_fail(err, MLFLOW_E_PROTOCOL,
                       "artifact tree too large or too deep (at %.200s)",
                       out->items[i].path);
      break;
    }
    char *dir = strdup(out->items[i].path);
    if (!dir) {
      st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
      break;
    }
    st = list_one(c, root, dir, out, err);
    free(dir);
  }
  free(root);
  if (st) mlflow_file_list_free(out);
  return st;
}

/* Downloads root/rel into local_path through a temporary file in the same
 * directory, fsync'd and renamed into place. */
static mlflow_status download_to(mlflow_client *c, const char *root,
                                 const char *rel, const char *local_path,
                                 mlflow_error *err) {
  mlflow_buf url = {0}, what = {0}, tmp = {0};
  mlflow_status st = MLFLOW_OK;
  FILE *f = NULL;
  if (artifact_url(c, &url, root, rel) ||
      mlflow_buf_appendf(&what, "GET artifact %s", rel) ||
      mlflow_buf_appendf(&tmp, "%s.part-XXXXXX", local_path)) {
    st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    goto done;
  }
  int fd = mkstemp(tmp.data);
  if (fd < 0 || !(f = fdopen(fd, "w+b"))) {
    st = mlflow_fail(err, MLFLOW_E_IO, "cannot create %s: %s", tmp.data,
                     strerror(errno));
    if (fd >= 0) close(fd);
    goto done;
  }
  mlflow_http_req req = {.method = "GET", .url = url.data, .what = what.data,
                         .download = f, .max_retries = -1};
  mlflow_http_resp resp;
  st = mlflow_http_do(c, &req, &resp, err);
  mlflow_http_resp_free(&resp);
  if (st == MLFLOW_OK && (fflush(f) != 0 || fsync(fileno(f)) != 0))
    st = mlflow_fail(err, MLFLOW_E_IO, "cannot write %s: %s", tmp.data,
                     strerror(errno));
  if (fclose(f) != 0 && st == MLFLOW_OK)
    st = mlflow_fail(err, MLFLOW_E_IO, "cannot write %s", tmp.data);
  if (st == MLFLOW_OK && rename(tmp.data, local_path) != 0)
    st = mlflow_fail(err, MLFLOW_E_IO, "cannot rename %s to %s: %s", tmp.data,
                     local_path, strerror(errno));
  if (st) unlink(tmp.data);
done:
  mlflow_buf_free(&url);
  mlflow_buf_free(&what);
  mlflow_buf_free(&tmp);
  return st;
}

mlflow_status mlflow_artifact_download_file(mlflow_client *c,
                                            const char *artifact_uri,
                                            const char *path,
                                            const char *local_path,
                                            mlflow_error *err) {
  if (!mlflow_path_is_safe(path))
    return mlflow_fail(err, MLFLOW_E_UNSAFE_PATH,
                       "artifact path '%.300s' is not a safe relative path",
                       path);
  char *root;
  mlflow_status st = mlflow_artifact_root_path(c, artifact_uri, &root, err);
  if (st) return st;
  st = download_to(c, root, path, local_path, err);
  free(root);
  return st;
}

/* Creates the directories of rel (a safe relative path) under base, each
 * one a real directory: a symlink planted inside base is refused, so no
 * write can land outside base. With is_file, the last component is left. */
static mlflow_status mkdirs_under(const char *base, const char *rel,
                                  int is_file, mlflow_error *err) {
  mlflow_buf p = {0};
  if (mlflow_buf_append(&p, base, strlen(base)))
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  mlflow_status st = MLFLOW_OK;
  const char *r = rel;
  while (*r && st == MLFLOW_OK) {
    size_t n = strcspn(r, "/");
    int last = r[n] == '\0';
    if (last && is_file) break;
    if (mlflow_buf_append(&p, "/", 1) || mlflow_buf_append(&p, r, n)) {
      st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
      break;
    }
    struct stat sb;
    if (mkdir(p.data, 0777) != 0 && errno != EEXIST)
      st = mlflow_fail(err, MLFLOW_E_IO, "cannot create directory %s: %s",
                       p.data, strerror(errno));
    else if (lstat(p.data, &sb) != 0 || !S_ISDIR(sb.st_mode))
      st = mlflow_fail(err, MLFLOW_E_UNSAFE_PATH,
                       "%s exists and is not a directory (a link?)", p.data);
    r += n;
    if (*r == '/') r++;
  }
  mlflow_buf_free(&p);
  return st;
}

mlflow_status mlflow_artifact_download_dir(mlflow_client *c,
                                           const char *artifact_uri,
                                           const char *subpath,
                                           const char *local_dir,
                                           mlflow_error *err) {
  mlflow_file_list list;
  mlflow_status st =
      mlflow_artifact_list(c, artifact_uri, subpath, 1, &list, err);
  if (st) return st;
  char *root = NULL;
  if ((st = mlflow_mkdirs(local_dir, err)) ||
      (st = mlflow_artifact_root_path(c, artifact_uri, &root, err)))
    goto done;
  size_t skip = subpath ? strlen(subpath) + 1 : 0;
  for (size_t i = 0; st == MLFLOW_OK && i < list.count; i++) {
    const mlflow_file_info *fi = &list.items[i];
    const char *rel = fi->path + skip; /* relative to local_dir */
    if (!mlflow_path_is_safe(fi->path) || !mlflow_path_is_safe(rel)) {
      st = mlflow_fail(err, MLFLOW_E_UNSAFE_PATH,
                       "unsafe artifact path '%.300s'", fi->path);
      break;
    }
    if (fi->is_dir) {
      st = mkdirs_under(local_dir, rel, 0, err);
      continue;
    }
    if ((st = mkdirs_under(local_dir, rel, 1, err))) break;
    mlflow_buf lp = {0};
    if (mlflow_buf_appendf(&lp, "%s/%s", local_dir, rel)) {
      st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
      break;
    }
    struct stat sb;
    if (lstat(lp.data, &sb) == 0 && S_ISLNK(sb.st_mode))
      st = mlflow_fail(err, MLFLOW_E_UNSAFE_PATH, "%s is a link", lp.data);
    else
      st = download_to(c, root, fi->path, lp.data, err);
    mlflow_buf_free(&lp);
  }
done:
  free(root);
  mlflow_file_list_free(&list);
  return st;
}

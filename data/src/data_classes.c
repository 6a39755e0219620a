/* data_classes.c - the class names of a dataset (data.h "Class names"):
 * the parser of class-name files (classes.txt, CIFAR-10's
 * batches.meta.txt), the built-in lists, the step of gf_dataset_load that
 * gives a loaded dataset its names, and the name-or-index lookup. The name
 * rule itself is gf_base's (gf/class_name.h).
 * Not a reader of images or labels: the readers (data_idx.c, data_cifar.c,
 * data_folder.c) give a labelled dataset its default names and this file
 * replaces them where a better source exists. */
#include "data_internal.h"
#include "gf/parse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CIFAR_META "batches.meta.txt"
#define KNOWN_CLASSES 10 /* MNIST, Fashion-MNIST, CIFAR-10 */
/* Bytes of a name shown in an error message before "...". */

/* Fashion-MNIST's labels, from its README (zalandoresearch/fashion-mnist). */
/* vsnprintf into buf[cap] for a message; a text cut short by the buffer
 * ends in "..." rather than passing for the whole one. Returns buf. */
static char *note(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static char *note(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  if (!gf_fits(n, cap) && cap > 4) memcpy(buf + cap - 4, "...", 4);
  return buf;
}

static const char *const FASHION_MNIST_NAMES[KNOWN_CLASSES] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress",   "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",     "Ankle boot"};


gf_status gf_data_class_name_check(const char *name, gf_err *err) {
  return gf_class_name_check(name, err);
}

gf_status gf_data_names_make(int n, const char *const *names,
                             const size_t *lens, char ***out,
                             const char *what, gf_err *err) {
  *out = NULL;
  if (n < 1 || n > GF_DATA_MAX_CLASSES) {
    return gf_fail(err, GF_EINVAL, "%s: %d classes (1..%d supported)", what,
                   n, GF_DATA_MAX_CLASSES);
  }
  size_t bytes = (size_t)n * sizeof(char *);
  for (int k = 0; k < n; k++) {
    bytes += (lens ? lens[k] : strlen(names[k])) + 1;
  }
  char **v = malloc(bytes);
  if (!v) {
    return gf_fail(err, GF_ENOMEM, "%s: out of memory for %d class names",
                   what, n);
  }
  char *s = (char *)(v + n);
  for (int k = 0; k < n; k++) {
    size_t l = lens ? lens[k] : strlen(names[k]);
    memcpy(s, names[k], l);
    s[l] = '\0';
    v[k] = s;
    s += l + 1;
  }
  *out = v;
  return GF_OK;
}

gf_status gf_data_names_indices(int n, char ***out, const char *what,
                                gf_err *err) {
  char text[GF_DATA_MAX_CLASSES][4];
  const char *p[GF_DATA_MAX_CLASSES];
  if (n < 1 || n > GF_DATA_MAX_CLASSES) {
    *out = NULL;
    return gf_fail(err, GF_EINVAL, "%s: %d classes (1..%d supported)", what,
                   n, GF_DATA_MAX_CLASSES);
  }
  for (int k = 0; k < n; k++) {
    note(text[k], sizeof text[k], "%d", k);
    p[k] = text[k];
  }
  return gf_data_names_make(n, p, NULL, out, what, err);
}

gf_status gf_data_class_names_parse(const uint8_t *buf, size_t len,
                                    const char *name, char ***names, int *n,
                                    gf_err *err) {
  *names = NULL;
  *n = 0;
  if (len > GF_DATA_CLASSES_FILE_MAX) {
    return gf_fail(err, GF_EFORMAT,
                   "%s: %zu bytes, more than the %d a class-name file may "
                   "have",
                   name, len, GF_DATA_CLASSES_FILE_MAX);
  }
  const char *p[GF_DATA_MAX_CLASSES];
  size_t l[GF_DATA_MAX_CLASSES];
  int count = 0, line = 0, blank = 0;
  size_t pos = 0;
  if (len >= 3 && buf[0] == 0xEF && buf[1] == 0xBB && buf[2] == 0xBF) pos = 3;
  while (pos < len) {
    size_t end = pos;
    while (end < len && buf[end] != '\n') end++;
    size_t ll = end - pos;
    if (ll && buf[pos + ll - 1] == '\r') ll--;
    line++;
    if (ll == 0) {
      if (!blank) blank = line;
    } else {
      if (blank) {
        return gf_fail(err, GF_EFORMAT,
                       "%s: line %d: empty (one class name per line, label "
                       "0 first; empty lines only at the end)",
                       name, blank);
      }
      if (count == GF_DATA_MAX_CLASSES) {
        return gf_fail(err, GF_EFORMAT,
                       "%s: line %d: more than %d class names", name, line,
                       GF_DATA_MAX_CLASSES);
      }
      char why[128], q[GF_CLASS_NAME_QUOTE_CAP];
      const char *w = gf_class_name_problem((const char *)buf + pos, ll, why, sizeof why);
      if (w) {
        gf_class_name_quote_n((const char *)buf + pos, ll, q, sizeof q);
        return gf_fail(err, GF_EFORMAT, "%s: line %d: class name %s %s",
                       name, line, q, w);
      }
      for (int k = 0; k < count; k++) {
        if (l[k] == ll && memcmp(p[k], buf + pos, ll) == 0) {
          gf_class_name_quote_n((const char *)buf + pos, ll, q, sizeof q);
          return gf_fail(err, GF_EFORMAT,
                         "%s: line %d: class name %s repeats line %d", name,
                         line, q, k + 1);
        }
      }
      p[count] = (const char *)buf + pos;
      l[count] = ll;
      count++;
    }
    pos = end + 1;
  }
  if (count == 0) {
    return gf_fail(err, GF_EFORMAT,
                   "%s: no class names (one per line, label 0 first)", name);
  }
  gf_status st = gf_data_names_make(count, p, l, names, name, err);
  if (st) return st;
  *n = count;
  return GF_OK;
}

/* Reads the class-name file at path into *buf (malloc'd, the caller frees)
 * and *len. *found = 0 (and GF_OK) when nothing exists there; anything
 * else that is not a readable regular file of at most
 * GF_DATA_CLASSES_FILE_MAX bytes is an error naming it. */
static gf_status read_names_file(const char *path, uint8_t **buf,
                                 size_t *len, int *found, gf_err *err) {
  *buf = NULL;
  *len = 0;
  *found = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) return GF_OK;
    return gf_fail(err, GF_EIO, "%s: cannot open: %s", path, strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return gf_fail(err, GF_EIO, "%s: cannot stat: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return gf_fail(err, GF_EFORMAT,
                   "%s: not a regular file (class names, one per line)",
                   path);
  }
  if (st.st_size > GF_DATA_CLASSES_FILE_MAX) {
    close(fd);
    return gf_fail(err, GF_EFORMAT,
                   "%s: %lld bytes, more than the %d a class-name file may "
                   "have",
                   path, (long long)st.st_size, GF_DATA_CLASSES_FILE_MAX);
  }
  size_t n = (size_t)st.st_size;
  uint8_t *b = malloc(n ? n : 1);
  if (!b) {
    close(fd);
    return gf_fail(err, GF_ENOMEM, "%s: out of memory reading", path);
  }
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, b + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int e = errno;
      close(fd);
      free(b);
      return gf_fail(err, GF_EIO, "%s: %s", path,
                     r < 0 ? strerror(e) : "file shrank while being read");
    }
    got += (size_t)r;
  }
  close(fd);
  *buf = b;
  *len = n;
  *found = 1;
  return GF_OK;
}

/* Parses the class-name file at path when it exists: *found, and *names /
 * *n as gf_data_class_names_parse (caller frees *names). */
static gf_status load_names_file(const char *path, char ***names, int *n,
                                 int *found, gf_err *err) {
  uint8_t *buf;
  size_t len;
  *names = NULL;
  *n = 0;
  GF_TRY(read_names_file(path, &buf, &len, found, err));
  if (!*found) return GF_OK;
  gf_status st = gf_data_class_names_parse(buf, len, path, names, n, err);
  free(buf);
  return st;
}

/* Replaces ds's names with `names` (taken over) and records `from`. */
static void set_names(gf_dataset *ds, char **names, const char *from) {
  free(ds->class_names);
  ds->class_names = names;
  ds->class_names_from = from;
}

/* Checks an image folder's subdirectory names against the rule. */
static gf_status check_folder_names(const gf_dataset *ds, const char *dir,
                                    gf_err *err) {
  for (int k = 0; k < ds->num_classes; k++) {
    const uint8_t *p = (const uint8_t *)ds->class_names[k];
    size_t n = strlen(ds->class_names[k]);
    char why[128], q[GF_CLASS_NAME_QUOTE_CAP];
    const char *w = gf_class_name_problem((const char *)p, n, why, sizeof why);
    if (w) {
      gf_class_name_quote_n((const char *)p, n, q, sizeof q);
      return gf_fail(err, GF_EINVAL,
                     "%s: class subdirectory %s: its name %s; rename it, or "
                     "name the classes in %s/" GF_DATA_CLASSES_FILE
                     " (one per line, in the sorted order of the "
                     "subdirectories)",
                     dir, q, w, dir);
    }
  }
  return GF_OK;
}

/* Names of ds from DIR/classes.txt, when it exists. */
static gf_status apply_classes_file(gf_dataset *ds, const char *dir,
                                    gf_data_format f, int *found,
                                    gf_err *err) {
  char path[GF_PATH_MAX];
  GF_TRY(gf_format(path, sizeof path, err, "class-name file path", "%s/%s",
                   dir, GF_DATA_CLASSES_FILE));
  char **names;
  int n;
  GF_TRY(load_names_file(path, &names, &n, found, err));
  if (!*found) return GF_OK;
  if (!ds->labels) {
    free(names);
    return gf_fail(err, GF_EINVAL,
                   "%s: %d class names, but the dataset has no labels (an "
                   "image folder has labels when every image lies in a "
                   "first-level subdirectory)",
                   path, n);
  }
  if (f == GF_DATA_IDX && n >= ds->num_classes) {
    set_names(ds, names, GF_DATA_CLASSES_FILE);
    ds->num_classes = n;
    return GF_OK;
  }
  if (n != ds->num_classes) {
    free(names);
    if (f == GF_DATA_IDX) {
      return gf_fail(err, GF_EINVAL,
                     "%s: %d class names, but the labels go up to %d (%d "
                     "classes); one name per line, label 0 first",
                     path, n, ds->num_classes - 1, ds->num_classes);
    }
    return gf_fail(err, GF_EINVAL,
                   "%s: %d class names, but the dataset has %d classes (%s); "
                   "one name per line, label 0 first",
                   path, n, ds->num_classes,
                   f == GF_DATA_IMAGES ? "its class subdirectories"
                                       : "labels 0..9");
  }
  set_names(ds, names, GF_DATA_CLASSES_FILE);
  return GF_OK;
}

gf_status gf_data_class_names_finish(gf_dataset *ds, const char *dir,
                                     gf_data_format f, gf_err *err) {
  char **names = NULL;
  if (f == GF_DATA_MNIST || f == GF_DATA_FASHION_MNIST) {
    if (ds->num_classes > KNOWN_CLASSES) {
      return gf_fail(err, GF_EFORMAT,
                     "%s: label %d, but %s has %d classes (labels 0..%d); "
                     "read other IDX data with idx:%s",
                     ds->source, ds->num_classes - 1, gf_data_format_name(f),
                     KNOWN_CLASSES, KNOWN_CLASSES - 1, dir);
    }
    if (f == GF_DATA_FASHION_MNIST) {
      GF_TRY(gf_data_names_make(KNOWN_CLASSES, FASHION_MNIST_NAMES, NULL,
                                &names, ds->source, err));
      set_names(ds, names, "fashion-mnist");
    } else {
      GF_TRY(gf_data_names_indices(KNOWN_CLASSES, &names, ds->source, err));
      set_names(ds, names, "indices");
    }
    ds->num_classes = KNOWN_CLASSES;
  }
  int found = 0;
  GF_TRY(apply_classes_file(ds, dir, f, &found, err));
  if (found) return GF_OK;
  if (f == GF_DATA_CIFAR10) {
    char path[GF_PATH_MAX];
    int n;
    GF_TRY(gf_format(path, sizeof path, err, "CIFAR-10 file path", "%s/%s",
                     ds->source, CIFAR_META));
    GF_TRY(load_names_file(path, &names, &n, &found, err));
    if (!found) return GF_OK;
    if (n != ds->num_classes) {
      free(names);
      return gf_fail(err, GF_EFORMAT,
                     "%s: %d class names, but CIFAR-10 has %d", path, n,
                     ds->num_classes);
    }
    set_names(ds, names, CIFAR_META);
    return GF_OK;
  }
  if (f == GF_DATA_IMAGES && ds->class_names) {
    return check_folder_names(ds, dir, err);
  }
  return GF_OK;
}

gf_status gf_dataset_class_index(const gf_dataset *ds,
                                 const char *name_or_index, int *out,
                                 gf_err *err) {
  *out = -1;
  if (!ds || !ds->class_names || ds->num_classes < 1) {
    return gf_fail(err, GF_EINVAL,
                   "class: the dataset %s has no labels, so no classes",
                   ds ? ds->source : "(none)");
  }
  if (!name_or_index || !*name_or_index) {
    return gf_fail(err, GF_EINVAL,
                   "class: empty (give a class name or an index 0..%d)",
                   ds->num_classes - 1);
  }
  const char *s = name_or_index;
  for (int k = 0; k < ds->num_classes; k++) {
    if (strcmp(ds->class_names[k], s) == 0) {
      *out = k;
      return GF_OK;
    }
  }
  const size_t len = strlen(s);
  char q[GF_CLASS_NAME_QUOTE_CAP];
  gf_class_name_quote(s, q, sizeof q);
  size_t digits = strspn(s, "0123456789");
  if (digits == len && (len == 1 || s[0] != '0')) {
    int v;
    if (ds->num_classes > 0 &&
        gf_parse_int(NULL, s, 0, ds->num_classes - 1, &v, NULL) == GF_OK) {
      *out = v;
      return GF_OK;
    }
    return gf_fail(err, GF_ENOTFOUND,
                   "class %s: no class of that name, and not an index "
                   "0..%d",
                   q, ds->num_classes - 1);
  }
  for (int k = 0; k < ds->num_classes; k++) {
    if (strcasecmp(ds->class_names[k], s) == 0) {
      return gf_fail(err, GF_ENOTFOUND,
                     "class %s: no such class; names are case-sensitive: "
                     "did you mean '%s' (index %d)?",
                     q, ds->class_names[k], k);
    }
  }
  char list[320];
  size_t o = 0;
  for (int k = 0; k < ds->num_classes; k++) {
    int m = snprintf(list + o, sizeof list - o, "%s'%s'", k ? ", " : "",
                     ds->class_names[k]);
    if (!gf_fits(m, sizeof list - o)) {
      note(list + o, sizeof list - o, ", ...");
      break;
    }
    o += (size_t)m;
  }
  return gf_fail(err, GF_ENOTFOUND,
                 "class %s: no such class name or index (%d classes, 0..%d: "
                 "%s)",
                 q, ds->num_classes, ds->num_classes - 1, list);
}

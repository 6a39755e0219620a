/* replay_main.c - runs a libFuzzer target over files without libFuzzer.
 *
 * Each argument is a file or a directory (its regular files are read, in
 * sorted order). Every input goes through LLVMFuzzerTestOneInput once; under
 * the sanitizer build a parser bug on a corpus file then fails the test.
 * Built for every fuzz target when GF_FUZZ is off, so ctest replays the
 * checked-in corpus in both the normal and the sanitizer build. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (n < 0) {
    fclose(f);
    return 1;
  }
  /* malloc(n) exactly, so ASan sees reads past the input's end. */
  uint8_t *buf = malloc(n ? (size_t)n : 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    free(buf);
    fclose(f);
    return 1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "replay: cannot open directory %s\n", dir);
    return 1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *names);
      if (!nn) break;
      names = nn;
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp_str);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      rc |= run_file(path);
      (*count)++;
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  int rc = 0, count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: no such input %s\n", argv[i]);
      rc = 1;
    } else if (S_ISDIR(st.st_mode)) {
      rc |= run_dir(argv[i], &count);
    } else {
      rc |= run_file(argv[i]);
      count++;
    }
  }
  if (count == 0) {
    fprintf(stderr, "replay: no inputs\n");
    return 1;
  }
  fprintf(stderr, "replay: %d inputs\n", count);
  return rc;
}

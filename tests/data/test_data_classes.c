/* test_data_classes.c - the class names of datasets (data.h "Class
 * names"): the name rule, the class-name file parser on memory (BOM, CRLF,
 * trailing blank lines, every refusal), names from an image folder's
 * subdirectories (sorted like the labels, kept exactly, bad ones refused
 * naming the directory), from CIFAR-10 with and without batches.meta.txt,
 * from IDX with and without classes.txt and under the mnist: and
 * fashion-mnist: formats, classes.txt overriding each source and its
 * wrong counts, and gf_dataset_class_index by name and by index. */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data_test_util.h"
#include "gf/data.h"
#include "gf/data_parse.h"

static const char *const FASHION[10] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

static void put_text(const char *dir, const char *name, const char *text) {
  char p[4096];
  tu_path(p, sizeof p, dir, name);
  REQUIRE(tu_write(p, text, strlen(text)) == 0);
}

static void rm_file(const char *dir, const char *name) {
  char p[4096];
  tu_path(p, sizeof p, dir, name);
  REQUIRE(remove(p) == 0);
}

/* Loads dir with format f (1 channel, 4x4); prints the error on failure. */
static gf_status load(gf_dataset *ds, const char *dir, gf_data_format f,
                      gf_err *err) {
  gf_data_options o = {.path = dir, .format = f, .channels = 1, .height = 4,
                       .width = 4};
  return gf_dataset_load(ds, &o, err);
}

#define LOAD_OK(ds, dir, f)                                               \
  do {                                                                    \
    gf_err e_ = {0};                                                      \
    gf_status s_ = load(ds, dir, f, &e_);                                 \
    REQUIRE(s_ == GF_OK || (fprintf(stderr, "%s\n", e_.msg), 0));         \
  } while (0)

/* The load fails with code and a message holding every string given. */
static void expect_fail_at(int line, const char *dir, gf_data_format f,
                           gf_status code, const char *a, const char *b) {
  gf_dataset ds;
  gf_err err = {0};
  gf_status s = load(&ds, dir, f, &err);
  CHECKF(s == code, "line %d: status %d, want %d (%s)", line, s, code,
         err.msg);
  CHECKF(!a || strstr(err.msg, a), "line %d: '%s' not in: %s", line, a,
         err.msg);
  CHECKF(!b || strstr(err.msg, b), "line %d: '%s' not in: %s", line, b,
         err.msg);
  CHECK(ds.pixels == NULL && ds.labels == NULL && ds.class_names == NULL);
  gf_dataset_free(&ds);
}
#define EXPECT_FAIL(dir, f, code, a, b) \
  expect_fail_at(__LINE__, dir, f, code, a, b)

static void check_names_at(int line, const gf_dataset *ds, int n,
                           const char *const *want, const char *from) {
  CHECKF(ds->num_classes == n, "line %d: %d classes, want %d", line,
         ds->num_classes, n);
  REQUIRE(ds->class_names);
  for (int k = 0; k < n && k < ds->num_classes; k++) {
    CHECKF(strcmp(ds->class_names[k], want[k]) == 0,
           "line %d: name %d is '%s', want '%s'", line, k,
           ds->class_names[k], want[k]);
  }
  CHECKF(ds->class_names_from && strcmp(ds->class_names_from, from) == 0,
         "line %d: names from '%s', want '%s'", line,
         ds->class_names_from ? ds->class_names_from : "(null)", from);
}
#define CHECK_NAMES(ds, n, want, from) \
  check_names_at(__LINE__, ds, n, want, from)

static const char *const DIGITS[10] = {"0", "1", "2", "3", "4",
                                       "5", "6", "7", "8", "9"};

/* ---- the name rule ------------------------------------------------------ */

static void good_name(const char *name) {
  gf_err err = {0};
  CHECKF(gf_data_class_name_check(name, &err) == GF_OK, "'%s': %s", name,
         err.msg);
}

static void bad_name_at(int line, const char *name, const char *why) {
  gf_err err = {0};
  CHECKF(gf_data_class_name_check(name, &err) == GF_EINVAL,
         "line %d: accepted", line);
  CHECKF(strstr(err.msg, why) != NULL, "line %d: '%s' not in: %s", line, why,
         err.msg);
}
#define BAD_NAME(name, why) bad_name_at(__LINE__, name, why)

static void test_name_rule(void) {
  good_name("cat");
  good_name("0");
  good_name("T-shirt/top");
  good_name("Ankle boot");
  good_name("rock 'n' roll");
  good_name("caf\xc3\xa9");         /* café */
  good_name("\xe7\x8c\xab");        /* 猫 */
  good_name("\xf0\x9f\x90\x88");    /* U+1F408 */
  good_name("a.b_c-d(e)[f]:g!@$*~");
  char max[GF_DATA_CLASS_NAME_MAX + 2];
  memset(max, 'x', GF_DATA_CLASS_NAME_MAX);
  max[GF_DATA_CLASS_NAME_MAX] = '\0';
  good_name(max);
  max[GF_DATA_CLASS_NAME_MAX] = 'x';
  max[GF_DATA_CLASS_NAME_MAX + 1] = '\0';
  BAD_NAME(max, "65 bytes long, more than the 64");
  BAD_NAME("", "is empty");
  const char *forbidden = GF_DATA_CLASS_NAME_FORBIDDEN;
  for (const char *c = forbidden; *c; c++) {
    char n[8] = {'a', *c, 'b', 0};
    char why[16];
    snprintf(why, sizeof why, "contains '%c'", *c);
    BAD_NAME(n, why);
  }
  BAD_NAME("a\tb", "control character 0x09");
  BAD_NAME("a\tb", "'a\\x09b'"); /* the name is quoted escaped */
  BAD_NAME("a\x7f", "control character 0x7F");
  BAD_NAME("a\xc2\x85", "control character U+0085");
  BAD_NAME("a\xe2\x80\x8b" "b", "invisible character U+200B");
  BAD_NAME("\xe2\x80\xae" "abc", "invisible character U+202E");
  BAD_NAME("\xef\xbb\xbf" "cat", "invisible character U+FEFF");
  BAD_NAME("\xff", "not valid UTF-8");
  BAD_NAME("\xff", "'\\xFF'");
  BAD_NAME("\xc0\xaf", "not valid UTF-8"); /* overlong '/' */
  BAD_NAME("\xed\xa0\x80", "not valid UTF-8"); /* a surrogate */
  BAD_NAME(" cat", "begins with a space");
  BAD_NAME("cat ", "ends with a space");
  gf_err err = {0};
  CHECK(gf_data_class_name_check(NULL, &err) == GF_EINVAL);
  /* A long bad name is shown cut, with "...". */
  char longbad[200];
  memset(longbad, 'y', sizeof longbad - 1);
  longbad[sizeof longbad - 1] = '\0';
  longbad[150] = ',';
  CHECK(gf_data_class_name_check(longbad, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "...'") != NULL);
}

/* ---- the class-name file parser ---------------------------------------- */

static gf_status parse(const char *text, size_t len, char ***names, int *n,
                       gf_err *err) {
  return gf_data_class_names_parse((const uint8_t *)text, len, "c.txt", names,
                                   n, err);
}

static void parse_ok_at(int line, const char *text, size_t len, int n,
                        const char *const *want) {
  char **names = (char **)1;
  int got = -1;
  gf_err err = {0};
  gf_status s = parse(text, len, &names, &got, &err);
  CHECKF(s == GF_OK, "line %d: %s", line, err.msg);
  if (s != GF_OK) return;
  CHECKF(got == n, "line %d: %d names, want %d", line, got, n);
  for (int k = 0; k < n && k < got; k++) {
    CHECKF(strcmp(names[k], want[k]) == 0, "line %d: '%s' != '%s'", line,
           names[k], want[k]);
  }
  free(names);
}
#define PARSE_OK(text, n, ...)                                         \
  do {                                                                 \
    const char *const w_[] = {__VA_ARGS__};                            \
    parse_ok_at(__LINE__, text, sizeof(text) - 1, n, w_);              \
  } while (0)

static void parse_bad_at(int line, const char *text, size_t len,
                         const char *why) {
  char **names = (char **)1;
  int n = -1;
  gf_err err = {0};
  CHECKF(parse(text, len, &names, &n, &err) == GF_EFORMAT, "line %d: accepted",
         line);
  CHECKF(names == NULL && n == 0, "line %d: output not cleared", line);
  CHECKF(strstr(err.msg, "c.txt") != NULL, "line %d: file not named: %s",
         line, err.msg);
  CHECKF(strstr(err.msg, why) != NULL, "line %d: '%s' not in: %s", line, why,
         err.msg);
}
#define PARSE_BAD(text, why) parse_bad_at(__LINE__, text, sizeof(text) - 1, why)

static void test_parse(void) {
  PARSE_OK("cat\ndog\n", 2, "cat", "dog");
  PARSE_OK("cat\ndog", 2, "cat", "dog");              /* no final newline */
  PARSE_OK("cat\r\ndog\r\n", 2, "cat", "dog");        /* CRLF */
  PARSE_OK("\xef\xbb\xbf" "cat\ndog\n", 2, "cat", "dog"); /* BOM */
  PARSE_OK("cat\ndog\n\n\r\n\n", 2, "cat", "dog");    /* blank tail */
  PARSE_OK("Cat\ncat\nCAT\n", 3, "Cat", "cat", "CAT"); /* case differs */
  PARSE_OK("T-shirt/top\nAnkle boot\n", 2, "T-shirt/top", "Ankle boot");
  /* CIFAR-10's batches.meta.txt, as in the tarball. */
  PARSE_OK("airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\n"
           "truck\n\n",
           10, "airplane", "automobile", "bird", "cat", "deer", "dog", "frog",
           "horse", "ship", "truck");

  PARSE_BAD("", "no class names");
  PARSE_BAD("\n\n", "no class names");
  PARSE_BAD("\xef\xbb\xbf", "no class names");
  PARSE_BAD("cat\n\ndog\n", "line 2: empty");
  PARSE_BAD("\ncat\n", "line 1: empty");
  PARSE_BAD("cat\ndog\ncat\n", "line 3: class name 'cat' repeats line 1");
  PARSE_BAD("cat\na,b\n", "line 2: class name 'a,b' contains ','");
  PARSE_BAD("cat\ndog \n", "line 2: class name 'dog ' ends with a space");
  PARSE_BAD("cat\nd\rog\n", "control character 0x0D");
  PARSE_BAD("cat\nd\0g\n", "line 2: class name 'd\\x00g' contains the "
                           "control character 0x00");
  PARSE_BAD("cat\n\xff\xfe\n", "line 2: class name '\\xFF\\xFE' is not valid");
  PARSE_BAD("\xef\xbb\xbf\xef\xbb\xbf" "cat\n",
            "line 1: class name '\xef\xbb\xbf" "cat' contains the invisible "
            "character U+FEFF"); /* a second BOM is part of the name */

  /* 256 names are the most; 257 are refused at the 257th line. */
  size_t cap = 300 * 5;
  char *many = malloc(cap);
  REQUIRE(many);
  size_t o = 0;
  for (int k = 0; k < 257; k++) o += (size_t)snprintf(many + o, cap - o, "c%d\n", k);
  char **names;
  int n;
  gf_err err = {0};
  size_t len256 = 0;
  for (int k = 0, lines = 0; lines < 256; k++) {
    if (many[k] == '\n') lines++;
    len256 = (size_t)k + 1;
  }
  CHECK(parse(many, len256, &names, &n, &err) == GF_OK);
  CHECK_INT_EQ(n, 256);
  if (n == 256) CHECK_STR_EQ(names[255], "c255");
  free(names);
  CHECK(parse(many, o, &names, &n, &err) == GF_EFORMAT);
  CHECK(strstr(err.msg, "line 257: more than 256 class names") != NULL);
  free(many);
  /* Too large a file is refused before it is read line by line. */
  char *big = malloc(GF_DATA_CLASSES_FILE_MAX + 1);
  REQUIRE(big);
  memset(big, '\n', GF_DATA_CLASSES_FILE_MAX + 1);
  big[0] = 'a';
  CHECK(parse(big, GF_DATA_CLASSES_FILE_MAX, &names, &n, &err) == GF_OK);
  free(names);
  CHECK(parse(big, GF_DATA_CLASSES_FILE_MAX + 1, &names, &n, &err) ==
        GF_EFORMAT);
  CHECK(strstr(err.msg, "more than the 65536") != NULL);
  free(big);
}

/* ---- image folders ------------------------------------------------------ */

static void write_png_in(const char *dir, const char *sub, int value) {
  char d[4096], p[4096];
  tu_path(d, sizeof d, dir, sub);
  REQUIRE(tu_mkdir(d) == 0);
  uint16_t sm[4];
  for (int i = 0; i < 4; i++) sm[i] = (uint16_t)value;
  size_t len;
  uint8_t *b = tu_png(2, 2, PNG_COLOR_TYPE_GRAY, 8, sm, NULL, 0, 0, &len);
  REQUIRE(b);
  tu_path(p, sizeof p, d, "1.png");
  REQUIRE(tu_write(p, b, len) == 0);
  free(b);
}

static void test_folder(void) {
  char *dir = tu_tmpdir("classnames");
  REQUIRE(dir);
  /* Created unsorted. "a-b" sorts before "a" as a path ('-' < '/'), but
   * after it as a name: the labels and names follow the names. */
  const char *subs[] = {"dog", "a-b", "Ankle boot", "caf\xc3\xa9", "a",
                        "Dog"};
  for (int k = 0; k < 6; k++) write_png_in(dir, subs[k], 10 * k);
  gf_dataset ds;
  LOAD_OK(&ds, dir, GF_DATA_AUTO);
  const char *const want[] = {"Ankle boot", "Dog", "a", "a-b", "caf\xc3\xa9",
                              "dog"};
  CHECK_NAMES(&ds, 6, want, "directories");
  CHECK(ds.format == GF_DATA_IMAGES);
  /* Image i's label names the subdirectory it came from. */
  for (int64_t i = 0; i < ds.n; i++) {
    int v = ds.pixels[i * 16];
    const char *from = subs[v / 10];
    CHECK_STR_EQ(ds.class_names[ds.labels[i]], from);
  }
  int k = -1;
  gf_err err = {0};
  CHECK(gf_dataset_class_index(&ds, "caf\xc3\xa9", &k, &err) == GF_OK);
  CHECK_INT_EQ(k, 4);
  CHECK(gf_dataset_class_index(&ds, "Dog", &k, &err) == GF_OK);
  CHECK_INT_EQ(k, 1);
  gf_dataset_free(&ds);
  CHECK(ds.class_names == NULL && ds.class_names_from == NULL);

  /* A subdirectory whose name breaks the rule: refused, naming it and the
   * way out. */
  write_png_in(dir, "x&y", 70);
  EXPECT_FAIL(dir, GF_DATA_AUTO, GF_EINVAL, "class subdirectory 'x&y'",
              "contains '&'");
  EXPECT_FAIL(dir, GF_DATA_IMAGES, GF_EINVAL, dir, "classes.txt");
  /* classes.txt replaces the names, so the folder loads. */
  put_text(dir, "classes.txt", "ankle\nDOG\nA\nAB\ncafe\ndog\nx and y\n");
  LOAD_OK(&ds, dir, GF_DATA_AUTO);
  const char *const renamed[] = {"ankle", "DOG", "A", "AB", "cafe", "dog",
                                 "x and y"};
  CHECK_NAMES(&ds, 7, renamed, "classes.txt");
  gf_dataset_free(&ds);
  /* One name per subdirectory, no more, no fewer. */
  put_text(dir, "classes.txt", "a\nb\nc\nd\ne\nf\n");
  EXPECT_FAIL(dir, GF_DATA_AUTO, GF_EINVAL, "6 class names",
              "the dataset has 7 classes (its class subdirectories)");
  put_text(dir, "classes.txt", "a\nb\nc\nd\ne\nf\ng\nh\n");
  EXPECT_FAIL(dir, GF_DATA_AUTO, GF_EINVAL, "/classes.txt: 8 class names",
              NULL);
  put_text(dir, "classes.txt", "a\nb\nc\nd\ne\nf\na\n");
  EXPECT_FAIL(dir, GF_DATA_AUTO, GF_EFORMAT, "line 7", "repeats line 1");
  rm_file(dir, "classes.txt");
  tu_rmtree(dir);
  free(dir);

  /* A flat folder has no labels, hence no names; a classes.txt there names
   * classes nothing has. */
  dir = tu_tmpdir("classflat");
  REQUIRE(dir);
  write_png_in(dir, "only", 5);
  char p[4096], q[4096];
  tu_path(p, sizeof p, dir, "only/1.png");
  tu_path(q, sizeof q, dir, "1.png");
  REQUIRE(rename(p, q) == 0);
  LOAD_OK(&ds, dir, GF_DATA_AUTO);
  CHECK(ds.labels == NULL && ds.class_names == NULL && ds.num_classes == 0);
  CHECK(ds.class_names_from == NULL);
  CHECK(gf_dataset_class_index(&ds, "0", &k, &err) == GF_EINVAL);
  CHECK_INT_EQ(k, -1);
  CHECK(strstr(err.msg, "no labels") != NULL);
  gf_dataset_free(&ds);
  put_text(dir, "classes.txt", "a\nb\n");
  EXPECT_FAIL(dir, GF_DATA_AUTO, GF_EINVAL, "has no labels", "classes.txt");
  tu_rmtree(dir);
  free(dir);
}

/* ---- CIFAR-10 ----------------------------------------------------------- */

static void test_cifar(void) {
  char *tmp = tu_tmpdir("classcifar");
  REQUIRE(tmp);
  char base[4096], p[4096];
  tu_path(base, sizeof base, tmp, "cifar-10-batches-bin");
  REQUIRE(tu_mkdir(base) == 0);
  uint8_t rec[3073];
  for (int f = 0; f < 5; f++) {
    memset(rec, 40 * f, sizeof rec);
    rec[0] = (uint8_t)(2 * f + 1);
    char name[32];
    snprintf(name, sizeof name, "data_batch_%d.bin", f + 1);
    tu_path(p, sizeof p, base, name);
    REQUIRE(tu_write(p, rec, sizeof rec) == 0);
  }
  gf_dataset ds;
  LOAD_OK(&ds, tmp, GF_DATA_AUTO);
  CHECK_NAMES(&ds, 10, DIGITS, "indices");
  gf_dataset_free(&ds);

  /* batches.meta.txt of the tarball (a blank line at the end). */
  const char *meta = "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\n"
                     "horse\nship\ntruck\n\n";
  put_text(base, "batches.meta.txt", meta);
  const char *const cifar[10] = {"airplane", "automobile", "bird", "cat",
                                 "deer",     "dog",        "frog", "horse",
                                 "ship",     "truck"};
  LOAD_OK(&ds, tmp, GF_DATA_AUTO);
  CHECK_NAMES(&ds, 10, cifar, "batches.meta.txt");
  CHECK_STR_EQ(ds.class_names[ds.labels[4]], "truck"); /* label 9 */
  gf_dataset_free(&ds);
  LOAD_OK(&ds, base, GF_DATA_CIFAR10); /* the batch folder itself */
  CHECK_NAMES(&ds, 10, cifar, "batches.meta.txt");
  gf_dataset_free(&ds);

  /* A damaged batches.meta.txt is an error naming it. */
  put_text(base, "batches.meta.txt", "airplane\nautomobile\n");
  EXPECT_FAIL(tmp, GF_DATA_AUTO, GF_EFORMAT, "batches.meta.txt: 2 class names",
              "CIFAR-10 has 10");
  put_text(base, "batches.meta.txt", "airplane\n\nbird\n");
  EXPECT_FAIL(tmp, GF_DATA_AUTO, GF_EFORMAT, "batches.meta.txt: line 2: empty",
              NULL);

  /* classes.txt in the --data directory wins over batches.meta.txt (even a
   * damaged one, which is then not read). */
  put_text(tmp, "classes.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n");
  const char *const aj[10] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
  LOAD_OK(&ds, tmp, GF_DATA_AUTO);
  CHECK_NAMES(&ds, 10, aj, "classes.txt");
  gf_dataset_free(&ds);
  put_text(tmp, "classes.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n");
  EXPECT_FAIL(tmp, GF_DATA_AUTO, GF_EINVAL, "11 class names",
              "10 classes (labels 0..9)");
  tu_rmtree(tmp);
  free(tmp);
}

/* ---- IDX ---------------------------------------------------------------- */

/* An IDX pair of n 2x2 images with the given labels in dir. */
static void write_idx(const char *dir, uint32_t n, const uint8_t *labels) {
  uint8_t px[4 * 16];
  for (int i = 0; i < 64; i++) px[i] = (uint8_t)i;
  size_t il, ll;
  uint8_t *img = tu_idx_images(n, 2, 2, px, &il);
  uint8_t *lbl = tu_idx_labels(n, labels, &ll);
  REQUIRE(img && lbl);
  char p[4096];
  tu_path(p, sizeof p, dir, "train-images-idx3-ubyte");
  REQUIRE(tu_write(p, img, il) == 0);
  tu_path(p, sizeof p, dir, "train-labels-idx1-ubyte");
  REQUIRE(tu_write(p, lbl, ll) == 0);
  free(img);
  free(lbl);
}

static void test_idx(void) {
  char *dir = tu_tmpdir("classidx");
  REQUIRE(dir);
  const uint8_t labels[4] = {0, 2, 1, 2};
  write_idx(dir, 4, labels);
  gf_dataset ds;
  LOAD_OK(&ds, dir, GF_DATA_AUTO);
  CHECK_NAMES(&ds, 3, DIGITS, "indices");
  CHECK(ds.format == GF_DATA_IDX);
  gf_dataset_free(&ds);

  /* mnist: 10 classes whatever labels occur, named by digit. */
  LOAD_OK(&ds, dir, GF_DATA_MNIST);
  CHECK_NAMES(&ds, 10, DIGITS, "indices");
  CHECK(ds.format == GF_DATA_MNIST);
  CHECK_INT_EQ(ds.labels[1], 2);
  gf_dataset_free(&ds);
  /* fashion-mnist: its names. */
  LOAD_OK(&ds, dir, GF_DATA_FASHION_MNIST);
  CHECK_NAMES(&ds, 10, FASHION, "fashion-mnist");
  CHECK(ds.format == GF_DATA_FASHION_MNIST);
  CHECK_STR_EQ(gf_data_format_name(ds.format), "fashion-mnist");
  gf_dataset_free(&ds);
  /* Through the spec, as ganflow-train gives it. */
  char spec[4200];
  snprintf(spec, sizeof spec, "fashion-mnist:%s", dir);
  gf_data_options o = {.channels = 1, .height = 2, .width = 2};
  gf_err err = {0};
  REQUIRE(gf_data_spec_parse(spec, &o, &err) == GF_OK);
  CHECK(o.format == GF_DATA_FASHION_MNIST);
  CHECK_STR_EQ(o.path, dir);
  REQUIRE(gf_dataset_load(&ds, &o, &err) == GF_OK);
  CHECK_STR_EQ(ds.class_names[ds.labels[1]], "Pullover");
  gf_dataset_free(&ds);

  /* classes.txt: as many names as classes; more is fine for IDX (a subset
   * missing the last classes keeps them); fewer is an error. */
  put_text(dir, "classes.txt", "zero\none\ntwo\n");
  const char *const words[5] = {"zero", "one", "two", "three", "four"};
  LOAD_OK(&ds, dir, GF_DATA_AUTO);
  CHECK_NAMES(&ds, 3, words, "classes.txt");
  gf_dataset_free(&ds);
  put_text(dir, "classes.txt", "zero\r\none\r\ntwo\r\nthree\r\nfour\r\n");
  LOAD_OK(&ds, dir, GF_DATA_AUTO);
  CHECK_NAMES(&ds, 5, words, "classes.txt");
  gf_dataset_free(&ds);
  put_text(dir, "classes.txt", "zero\none\n");
  EXPECT_FAIL(dir, GF_DATA_AUTO, GF_EINVAL, "classes.txt: 2 class names",
              "labels go up to 2 (3 classes)");
  put_text(dir, "classes.txt", "zero\none\ntw=o\n");
  EXPECT_FAIL(dir, GF_DATA_AUTO, GF_EFORMAT,
              "classes.txt: line 3: class name 'tw=o' contains '='", NULL);
  /* ... and over the built-in names of fashion-mnist:, 10 exactly. */
  put_text(dir, "classes.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n");
  const char *const aj[10] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
  LOAD_OK(&ds, dir, GF_DATA_FASHION_MNIST);
  CHECK_NAMES(&ds, 10, aj, "classes.txt");
  gf_dataset_free(&ds);
  put_text(dir, "classes.txt", "a\nb\nc\n");
  EXPECT_FAIL(dir, GF_DATA_FASHION_MNIST, GF_EINVAL, "3 class names",
              "has 10 classes");
  rm_file(dir, "classes.txt");
  /* A directory where classes.txt should be is an error, not ignored. */
  char p[4096];
  tu_path(p, sizeof p, dir, "classes.txt");
  REQUIRE(tu_mkdir(p) == 0);
  EXPECT_FAIL(dir, GF_DATA_AUTO, GF_EFORMAT, "not a regular file", NULL);
  tu_rmtree(p);

  /* A label above 9 is not MNIST or Fashion-MNIST. */
  const uint8_t eleven[2] = {3, 10};
  write_idx(dir, 2, eleven);
  EXPECT_FAIL(dir, GF_DATA_FASHION_MNIST, GF_EFORMAT, "label 10",
              "fashion-mnist has 10 classes");
  EXPECT_FAIL(dir, GF_DATA_MNIST, GF_EFORMAT, "idx:", NULL);
  LOAD_OK(&ds, dir, GF_DATA_IDX);
  CHECK_NAMES(&ds, 11, ((const char *const[]){"0", "1", "2", "3", "4", "5",
                                              "6", "7", "8", "9", "10"}),
              "indices");
  gf_dataset_free(&ds);
  /* The memory readers give index names too. */
  uint8_t px[8] = {0};
  size_t il, ll;
  uint8_t *img = tu_idx_images(2, 2, 2, px, &il);
  uint8_t *lbl = tu_idx_labels(2, eleven, &ll);
  o = (gf_data_options){.channels = 1, .height = 2, .width = 2};
  REQUIRE(gf_data_idx_load_mem(&ds, img, il, "i", lbl, ll, "l", &o, &err) ==
          GF_OK);
  CHECK_INT_EQ(ds.num_classes, 11);
  CHECK_STR_EQ(ds.class_names[10], "10");
  gf_dataset_free(&ds);
  free(img);
  free(lbl);
  tu_rmtree(dir);
  free(dir);
}

/* ---- lookup ------------------------------------------------------------- */

static void lookup_ok_at(int line, const gf_dataset *ds, const char *s,
                         int want) {
  int k = -2;
  gf_err err = {0};
  gf_status st = gf_dataset_class_index(ds, s, &k, &err);
  CHECKF(st == GF_OK && k == want, "line %d: '%s' -> %d (%s), want %d", line,
         s, k, err.msg, want);
}
#define LOOKUP_OK(ds, s, want) lookup_ok_at(__LINE__, ds, s, want)

static void lookup_bad_at(int line, const gf_dataset *ds, const char *s,
                          gf_status code, const char *why) {
  int k = -2;
  gf_err err = {0};
  gf_status st = gf_dataset_class_index(ds, s, &k, &err);
  CHECKF(st == code && k == -1, "line %d: '%s' -> %d, status %d", line,
         s ? s : "(null)", k, st);
  CHECKF(strstr(err.msg, why) != NULL, "line %d: '%s' not in: %s", line, why,
         err.msg);
}
#define LOOKUP_BAD(ds, s, code, why) lookup_bad_at(__LINE__, ds, s, code, why)

static void test_lookup(void) {
  /* A dataset by hand: the lookup reads only the names. */
  uint8_t label = 0;
  gf_dataset ds = {0};
  ds.labels = &label;
  ds.num_classes = 10;
  ds.class_names = (char **)FASHION;
  snprintf(ds.source, sizeof ds.source, "/data/fm");
  LOOKUP_OK(&ds, "T-shirt/top", 0);
  LOOKUP_OK(&ds, "Sneaker", 7);
  LOOKUP_OK(&ds, "Ankle boot", 9);
  LOOKUP_OK(&ds, "0", 0);
  LOOKUP_OK(&ds, "7", 7);
  LOOKUP_OK(&ds, "9", 9);
  LOOKUP_BAD(&ds, "sneaker", GF_ENOTFOUND,
             "class 'sneaker': no such class; names are case-sensitive: did "
             "you mean 'Sneaker' (index 7)?");
  LOOKUP_BAD(&ds, "10", GF_ENOTFOUND, "class '10': no class of that name, "
                                      "and not an index 0..9");
  LOOKUP_BAD(&ds, "99999999999999999999", GF_ENOTFOUND, "not an index 0..9");
  LOOKUP_BAD(&ds, "07", GF_ENOTFOUND, "no such class name or index");
  LOOKUP_BAD(&ds, "-1", GF_ENOTFOUND, "no such class name or index");
  LOOKUP_BAD(&ds, "+1", GF_ENOTFOUND, "no such class name or index");
  LOOKUP_BAD(&ds, " 1", GF_ENOTFOUND, "no such class name or index");
  LOOKUP_BAD(&ds, "Sneaker ", GF_ENOTFOUND, "(10 classes, 0..9: "
                                            "'T-shirt/top', 'Trouser'");
  LOOKUP_BAD(&ds, "hat\x01", GF_ENOTFOUND, "class 'hat\\x01'");
  LOOKUP_BAD(&ds, "", GF_EINVAL, "empty (give a class name or an index 0..9)");
  LOOKUP_BAD(&ds, NULL, GF_EINVAL, "empty");

  /* Names that are numbers win over indices of the same spelling: an image
   * folder of "1" ... "10" sorts "10" second. */
  const char *const num[10] = {"1", "10", "2", "3", "4",
                               "5", "6",  "7", "8", "9"};
  ds.class_names = (char **)num;
  LOOKUP_OK(&ds, "10", 1);
  LOOKUP_OK(&ds, "1", 0);
  LOOKUP_OK(&ds, "0", 0); /* not a name: the index */
  LOOKUP_OK(&ds, "2", 2);

  /* Many long names: the list in the message is cut, not overflowed. */
  static char longnames[200][GF_DATA_CLASS_NAME_MAX + 1];
  static char *lp[200];
  for (int k = 0; k < 200; k++) {
    memset(longnames[k], 'a' + k % 26, GF_DATA_CLASS_NAME_MAX);
    snprintf(longnames[k] + GF_DATA_CLASS_NAME_MAX - 3, 4, "%03d", k);
    lp[k] = longnames[k];
  }
  ds.class_names = lp;
  ds.num_classes = 200;
  LOOKUP_OK(&ds, longnames[199], 199);
  LOOKUP_OK(&ds, "199", 199);
  LOOKUP_BAD(&ds, "nope", GF_ENOTFOUND, "(200 classes, 0..199: 'aaaa");

  ds.labels = NULL;
  ds.class_names = NULL;
  ds.num_classes = 0;
  LOOKUP_BAD(&ds, "1", GF_EINVAL, "/data/fm has no labels");
  LOOKUP_BAD(NULL, "1", GF_EINVAL, "no labels");
}

static void test_spec(void) {
  gf_err err = {0};
  gf_data_options o = {0};
  CHECK(gf_data_spec_parse("mnist:/d/m", &o, &err) == GF_OK);
  CHECK(o.format == GF_DATA_MNIST);
  CHECK_STR_EQ(o.path, "/d/m");
  CHECK(gf_data_spec_parse("fashion-mnist:rel/fm", &o, &err) == GF_OK);
  CHECK(o.format == GF_DATA_FASHION_MNIST);
  CHECK_STR_EQ(o.path, "rel/fm");
  CHECK(gf_data_spec_parse("fashion-mnist:", &o, &err) == GF_EINVAL);
  CHECK(gf_data_spec_parse("Fashion-MNIST:x", &o, &err) == GF_OK);
  CHECK(o.format == GF_DATA_AUTO); /* format names are lower case */
  CHECK_STR_EQ(gf_data_format_name(GF_DATA_MNIST), "mnist");
  CHECK_STR_EQ(gf_data_format_name(GF_DATA_FASHION_MNIST), "fashion-mnist");
}

int main(void) {
  test_name_rule();
  test_parse();
  test_folder();
  test_cifar();
  test_idx();
  test_lookup();
  test_spec();
  return check_report();
}

/* make_data_corpus.c - writes the seed corpora of the data fuzz targets
 * (tests/fuzz/fuzz_data_*.c) into DIR/data_idx, data_cifar, data_png,
 * data_jpeg and data_classes: valid files of each kind and broken ones
 * (wrong magic, mismatched counts, truncation, trailing bytes, bad labels,
 * flipped bytes; for class-name files blank lines, repeats, forbidden,
 * control and invisible characters, bad UTF-8, too many names).
 * Run by hand after changing a parser:
 *   build/tests/data/make_data_corpus tests/fuzz/corpus
 * Input framing matches the targets: idx = [geometry byte][image length,
 * 2 bytes LE][images][labels]; cifar = [geometry byte][records]; png,
 * jpeg and classes = the file itself. */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_test_util.h"

static const char *g_root;

static void emit(const char *target, const char *name, const uint8_t *b,
                 size_t n) {
  char dir[2048], p[4096];
  snprintf(dir, sizeof dir, "%s/%s", g_root, target);
  if (tu_mkdir(dir) != 0) exit(1);
  snprintf(p, sizeof p, "%s/%s", dir, name);
  if (tu_write(p, b, n) != 0) {
    fprintf(stderr, "cannot write %s\n", p);
    exit(1);
  }
}

/* [geometry][ilen LE16][img][lbl] */
static void emit_idx(const char *name, uint8_t geometry, const uint8_t *img,
                     size_t ilen, const uint8_t *lbl, size_t llen) {
  uint8_t *b = malloc(3 + ilen + llen);
  if (!b) exit(1);
  b[0] = geometry;
  b[1] = (uint8_t)ilen;
  b[2] = (uint8_t)(ilen >> 8);
  memcpy(b + 3, img, ilen);
  memcpy(b + 3 + ilen, lbl, llen);
  emit("data_idx", name, b, 3 + ilen + llen);
  free(b);
}

static void idx_corpus(void) {
  uint8_t px[3 * 25], lab[3] = {0, 4, 9};
  for (int i = 0; i < 75; i++) px[i] = (uint8_t)(i * 3);
  size_t il, ll;
  uint8_t *img = tu_idx_images(3, 5, 5, px, &il);
  uint8_t *lbl = tu_idx_labels(3, lab, &ll);
  emit_idx("valid_5x5_to_1x1", 0x00, img, il, lbl, ll);
  emit_idx("valid_5x5_rgb_up", 0x5d, img, il, lbl, ll);
  emit_idx("valid_5x5_pad", 0x62, img, il, lbl, ll);
  emit_idx("truncated_images", 0x10, img, il - 4, lbl, ll);
  emit_idx("truncated_labels", 0x10, img, il, lbl, ll - 1);
  emit_idx("labels_as_images", 0x10, lbl, ll, lbl, ll);
  uint8_t *b = malloc(il + 1);
  memcpy(b, img, il);
  b[il] = 0;
  emit_idx("trailing_byte", 0x10, b, il + 1, lbl, ll);
  memcpy(b, img, il);
  b[2] = 0x0d;
  emit_idx("float_type", 0x10, b, il, lbl, ll);
  memcpy(b, img, il);
  memset(b + 8, 0xff, 8);
  emit_idx("dims_overflow", 0x10, b, il, lbl, ll);
  memcpy(b, img, il);
  b[4] = 0x7f;
  emit_idx("count_huge", 0x10, b, il, lbl, ll);
  free(b);
  uint8_t lab2[2] = {1, 2};
  uint8_t *l2 = tu_idx_labels(2, lab2, &ll);
  emit_idx("count_mismatch", 0x10, img, il, l2, ll);
  free(l2);
  free(img);
  free(lbl);
  /* One real-sized 28x28 image. */
  uint8_t big[784];
  for (int i = 0; i < 784; i++) big[i] = (uint8_t)((i % 28) * (i / 28));
  img = tu_idx_images(1, 28, 28, big, &il);
  lbl = tu_idx_labels(1, lab + 2, &ll);
  emit_idx("valid_28x28_to_32", 0x7c, img, il, lbl, ll);
  free(img);
  free(lbl);
}

static void cifar_corpus(void) {
  uint8_t *b = calloc(1, 1 + 2 * 3073 + 5);
  if (!b) exit(1);
  b[0] = 0x7d; /* 3 channels, 32x32-ish */
  b[1] = 3;
  for (int i = 0; i < 3072; i++) b[2 + i] = (uint8_t)i;
  b[1 + 3073] = 9;
  for (int i = 0; i < 3072; i++) b[1 + 3073 + 1 + i] = (uint8_t)(255 - i % 256);
  emit("data_cifar", "valid_two_records", b, 1 + 2 * 3073);
  b[0] = 0x20;
  emit("data_cifar", "valid_gray_small", b, 1 + 2 * 3073);
  emit("data_cifar", "size_not_multiple", b, 1 + 3073 + 5);
  emit("data_cifar", "empty", b, 1);
  b[1 + 3073] = 10;
  emit("data_cifar", "bad_label", b, 1 + 2 * 3073);
  free(b);
}

static void png_one(const char *name, int w, int h, int color, int depth,
                    int interlace) {
  int ch = tu_png_channels(color);
  uint16_t *sm = malloc((size_t)w * h * ch * sizeof *sm);
  if (!sm) exit(1);
  int maxv = (1 << depth) - 1;
  if (color == PNG_COLOR_TYPE_PALETTE) maxv = 3;
  for (int i = 0; i < w * h * ch; i++) sm[i] = (uint16_t)((i * 37) % (maxv + 1));
  const uint8_t plte[12] = {0, 0, 0, 255, 0, 0, 0, 255, 0, 10, 20, 30};
  size_t n;
  uint8_t *b = tu_png(w, h, color, depth, sm, plte, 4, interlace, &n);
  free(sm);
  if (!b) exit(1);
  emit("data_png", name, b, n);
  if (strcmp(name, "rgb8") == 0) {
    emit("data_png", "truncated", b, n / 2);
    b[n - 20] ^= 0x40;
    emit("data_png", "flipped_idat", b, n);
    emit("data_png", "signature_only", b, 8);
  }
  free(b);
}

static void png_corpus(void) {
  png_one("gray8", 9, 7, PNG_COLOR_TYPE_GRAY, 8, 0);
  png_one("gray1", 13, 3, PNG_COLOR_TYPE_GRAY, 1, 0);
  png_one("gray_alpha", 5, 5, PNG_COLOR_TYPE_GRAY_ALPHA, 8, 0);
  png_one("rgb8", 8, 8, PNG_COLOR_TYPE_RGB, 8, 0);
  png_one("rgba8", 6, 4, PNG_COLOR_TYPE_RGB_ALPHA, 8, 0);
  png_one("palette2", 11, 6, PNG_COLOR_TYPE_PALETTE, 2, 0);
  png_one("rgb16", 4, 9, PNG_COLOR_TYPE_RGB, 16, 0);
  png_one("interlaced", 17, 3, PNG_COLOR_TYPE_RGB, 8, 1);
}

static void jpeg_corpus(void) {
  uint8_t px[24 * 16 * 3];
  for (int i = 0; i < (int)sizeof px; i++) px[i] = (uint8_t)(i * 5);
  size_t n;
  uint8_t *b = tu_jpeg(24, 16, 1, px, 80, 0, &n);
  emit("data_jpeg", "gray", b, n);
  free(b);
  b = tu_jpeg(24, 16, 3, px, 80, 0, &n);
  emit("data_jpeg", "rgb", b, n);
  emit("data_jpeg", "truncated", b, n * 2 / 3);
  emit("data_jpeg", "header_only", b, 40);
  free(b);
  b = tu_jpeg(24, 16, 3, px, 60, 1, &n);
  emit("data_jpeg", "progressive", b, n);
  free(b);
  b = tu_jpeg(1, 1, 3, px, 90, 0, &n);
  emit("data_jpeg", "one_pixel", b, n);
  free(b);
}

static void classes_one(const char *name, const char *text, size_t len) {
  emit("data_classes", name, (const uint8_t *)text, len);
}
#define CLASSES(name, text) classes_one(name, text, sizeof(text) - 1)

static void classes_corpus(void) {
  CLASSES("cifar10_meta", "airplane\nautomobile\nbird\ncat\ndeer\ndog\n"
                          "frog\nhorse\nship\ntruck\n\n");
  CLASSES("fashion_mnist", "T-shirt/top\nTrouser\nPullover\nDress\nCoat\n"
                           "Sandal\nShirt\nSneaker\nBag\nAnkle boot\n");
  CLASSES("crlf_bom", "\xef\xbb\xbf" "caf\xc3\xa9\r\n\xe7\x8c\xab\r\nCat\r\n"
                      "cat");
  CLASSES("digits_as_names", "1\n10\n2\n007\n");
  CLASSES("blank_inside", "cat\n\ndog\n");
  CLASSES("repeat", "cat\ndog\ncat\n");
  CLASSES("forbidden", "a,b\nc&d\ne=f\n");
  CLASSES("control", "a\tb\nc\x7f\n\xc2\x85\n");
  CLASSES("invisible", "a\xe2\x80\x8b" "b\n\xef\xbb\xbf\xef\xbb\xbf" "c\n");
  CLASSES("bad_utf8", "ok\n\xff\xfe\n\xc0\xaf\n\xed\xa0\x80\n");
  CLASSES("spaces", " lead\ntrail \n");
  CLASSES("nul", "a\0b\n");
  CLASSES("empty", "");
  char buf[257 * 6 + 80];
  size_t o = 0;
  for (int k = 0; k < 257; k++) {
    o += (size_t)snprintf(buf + o, sizeof buf - o, "c%d\n", k);
  }
  classes_one("too_many", buf, o);
  memset(buf, 'x', 70);
  buf[70] = '\n';
  classes_one("too_long", buf, 71);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  idx_corpus();
  cifar_corpus();
  png_corpus();
  jpeg_corpus();
  classes_corpus();
  return 0;
}

/* data_test_util.h - helpers of the data tests and of the fuzz corpus
 * generator: temporary directories, writing files (plain and gzip), and
 * encoders for the formats the readers parse (IDX, PNG via libpng, JPEG via
 * libjpeg), so the tests build their own inputs. Test-only code: failures
 * print and return NULL/-1; the tests REQUIRE success. */
#ifndef GF_DATA_TEST_UTIL_H
#define GF_DATA_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A fresh directory under $TMPDIR (or /tmp); malloc'd path, caller frees
 * (after tu_rmtree). */
char *tu_tmpdir(const char *tag);
/* Removes dir and everything under it. */
void tu_rmtree(const char *dir);
/* mkdir -p of one level; 0 on success (also when it exists). */
int tu_mkdir(const char *path);
/* Writes buf to path (gz: gzip-compressed); 0 on success. */
int tu_write(const char *path, const void *buf, size_t len);
int tu_write_gz(const char *path, const void *buf, size_t len);
/* Reads a whole file (gz: through gzread, plain files too); malloc'd. */
uint8_t *tu_read(const char *path, size_t *len);
uint8_t *tu_read_gz(const char *path, size_t *len);
/* path formatting into a static-free caller buffer. */
void tu_path(char *out, size_t cap, const char *dir, const char *name);

/* IDX files: images (magic 0x803) of n x rows x cols bytes px, labels
 * (magic 0x801) of n bytes. malloc'd; *len set. */
uint8_t *tu_idx_images(uint32_t n, uint32_t rows, uint32_t cols,
                       const uint8_t *px, size_t *len);
uint8_t *tu_idx_labels(uint32_t n, const uint8_t *labels, size_t *len);

/* PNG in memory. color: a PNG_COLOR_TYPE_*; depth: 1, 2, 4, 8 or 16.
 * samples: h rows of w pixels of png_channels(color) samples each,
 * interleaved, each < 2^depth (palette: indices into plte). plte: n_plte RGB
 * triples (palette only). interlace: 0 or 1 (Adam7). malloc'd. */
uint8_t *tu_png(int w, int h, int color, int depth, const uint16_t *samples,
                const uint8_t *plte, int n_plte, int interlace, size_t *len);
/* Channels per pixel of a PNG color type. */
int tu_png_channels(int color);

/* JPEG in memory: c = 1 (gray) or 3 (RGB interleaved) 8-bit samples.
 * progressive: 0 or 1. malloc'd. */
uint8_t *tu_jpeg(int w, int h, int c, const uint8_t *px, int quality,
                 int progressive, size_t *len);

/* Peak and current resident set size of this process in KiB (from
 * /proc/self/status VmHWM / VmRSS); -1 when unknown. */
long tu_rss_kib(int peak);

#endif

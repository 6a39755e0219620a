/* data_test_util.c - see data_test_util.h. Test support only. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "data_test_util.h"

#include <errno.h>
#include <ftw.h>
#include <png.h>
#include <stdio.h>
#include <jpeglib.h> /* after stdio.h: it uses FILE */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

char *tu_tmpdir(const char *tag) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  size_t cap = strlen(base) + strlen(tag) + 32;
  char *p = malloc(cap);
  if (!p) return NULL;
  snprintf(p, cap, "%s/gf_%s_XXXXXX", base, tag);
  if (!mkdtemp(p)) {
    fprintf(stderr, "mkdtemp %s: %s\n", p, strerror(errno));
    free(p);
    return NULL;
  }
  return p;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (flag == FTW_DP) return rmdir(path);
  return unlink(path);
}

void tu_rmtree(const char *dir) {
  if (dir) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int tu_mkdir(const char *path) {
  if (mkdir(path, 0755) == 0 || errno == EEXIST) return 0;
  fprintf(stderr, "mkdir %s: %s\n", path, strerror(errno));
  return -1;
}

void tu_path(char *out, size_t cap, const char *dir, const char *name) {
  snprintf(out, cap, "%s/%s", dir, name);
}

int tu_write(const char *path, const void *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "open %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t w = len ? fwrite(buf, 1, len, f) : 0;
  int rc = fclose(f);
  return (w == len && rc == 0) ? 0 : -1;
}

int tu_write_gz(const char *path, const void *buf, size_t len) {
  gzFile g = gzopen(path, "wb6");
  if (!g) return -1;
  const uint8_t *p = buf;
  size_t done = 0;
  while (done < len) {
    unsigned chunk = len - done > (1u << 30) ? (1u << 30) : (unsigned)(len - done);
    int w = gzwrite(g, p + done, chunk);
    if (w <= 0) {
      gzclose(g);
      return -1;
    }
    done += (size_t)w;
  }
  return gzclose(g) == Z_OK ? 0 : -1;
}

uint8_t *tu_read_gz(const char *path, size_t *len) {
  gzFile g = gzopen(path, "rb");
  if (!g) return NULL;
  size_t cap = 1 << 16, n = 0;
  uint8_t *b = malloc(cap);
  for (;;) {
    if (!b) break;
    if (n == cap) {
      uint8_t *nb = realloc(b, cap * 2);
      if (!nb) {
        free(b);
        b = NULL;
        break;
      }
      b = nb;
      cap *= 2;
    }
    int r = gzread(g, b + n, (unsigned)(cap - n));
    if (r < 0) {
      free(b);
      b = NULL;
      break;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  gzclose(g);
  *len = n;
  return b;
}

uint8_t *tu_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
  if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *len = n > 0 ? (size_t)n : 0;
  return b;
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

uint8_t *tu_idx_images(uint32_t n, uint32_t rows, uint32_t cols,
                       const uint8_t *px, size_t *len) {
  size_t body = (size_t)n * rows * cols;
  uint8_t *b = malloc(16 + body);
  if (!b) return NULL;
  put_be32(b, 0x803);
  put_be32(b + 4, n);
  put_be32(b + 8, rows);
  put_be32(b + 12, cols);
  if (body) memcpy(b + 16, px, body);
  *len = 16 + body;
  return b;
}

uint8_t *tu_idx_labels(uint32_t n, const uint8_t *labels, size_t *len) {
  uint8_t *b = malloc(8 + (size_t)n);
  if (!b) return NULL;
  put_be32(b, 0x801);
  put_be32(b + 4, n);
  if (n) memcpy(b + 8, labels, n);
  *len = 8 + (size_t)n;
  return b;
}

int tu_png_channels(int color) {
  switch (color) {
  case PNG_COLOR_TYPE_GRAY: return 1;
  case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
  case PNG_COLOR_TYPE_RGB: return 3;
  case PNG_COLOR_TYPE_RGB_ALPHA: return 4;
  case PNG_COLOR_TYPE_PALETTE: return 1;
  }
  return 0;
}

/* Growing memory sink for libpng. */
typedef struct mem_sink {
  uint8_t *buf;
  size_t len, cap;
  int failed;
} mem_sink;

static void sink_write(png_structp png, png_bytep data, size_t n) {
  mem_sink *s = png_get_io_ptr(png);
  if (s->failed) return;
  if (s->len + n > s->cap) {
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->len + n) cap *= 2;
    uint8_t *b = realloc(s->buf, cap);
    if (!b) {
      s->failed = 1;
      return;
    }
    s->buf = b;
    s->cap = cap;
  }
  memcpy(s->buf + s->len, data, n);
  s->len += n;
}

static void sink_flush(png_structp png) { (void)png; }

uint8_t *tu_png(int w, int h, int color, int depth, const uint16_t *samples,
                const uint8_t *plte, int n_plte, int interlace, size_t *len) {
  const int ch = tu_png_channels(color);
  mem_sink sink = {0};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  /* Rows, packed as PNG stores them (big-endian 16-bit, <8-bit packed). */
  size_t rowbytes = ((size_t)w * ch * depth + 7) / 8;
  uint8_t *rows = calloc((size_t)h, rowbytes);
  png_bytep *rp = malloc((size_t)h * sizeof *rp);
  uint8_t *volatile vrows = rows;
  png_bytep *volatile vrp = rp;
  if (!png || !info || !rows || !rp) {
    png_destroy_write_struct(&png, &info);
    free(rows);
    free(rp);
    return NULL;
  }
  for (int y = 0; y < h; y++) {
    uint8_t *row = rows + (size_t)y * rowbytes;
    rp[y] = row;
    for (int i = 0; i < w * ch; i++) {
      unsigned v = samples[(size_t)y * w * ch + i];
      if (depth == 16) {
        row[2 * i] = (uint8_t)(v >> 8);
        row[2 * i + 1] = (uint8_t)v;
      } else if (depth == 8) {
        row[i] = (uint8_t)v;
      } else {
        int per = 8 / depth;
        int shift = 8 - depth * (i % per + 1);
        row[i / per] |= (uint8_t)(v << shift);
      }
    }
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    free(vrows);
    free(vrp);
    free(sink.buf);
    return NULL;
  }
  png_set_write_fn(png, &sink, sink_write, sink_flush);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, color,
               interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (color == PNG_COLOR_TYPE_PALETTE) {
    png_color pal[256];
    for (int k = 0; k < n_plte; k++) {
      pal[k].red = plte[3 * k];
      pal[k].green = plte[3 * k + 1];
      pal[k].blue = plte[3 * k + 2];
    }
    png_set_PLTE(png, info, pal, n_plte);
  }
  png_set_rows(png, info, rp);
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
  png_destroy_write_struct(&png, &info);
  free(rows);
  free(rp);
  if (sink.failed) {
    free(sink.buf);
    return NULL;
  }
  *len = sink.len;
  return sink.buf;
}

uint8_t *tu_jpeg(int w, int h, int c, const uint8_t *px, int quality,
                 int progressive, size_t *len) {
  struct jpeg_compress_struct cinfo;
  struct jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr); /* test code: libjpeg exits on error */
  jpeg_create_compress(&cinfo);
  unsigned char *out = NULL;
  unsigned long out_len = 0;
  jpeg_mem_dest(&cinfo, &out, &out_len);
  cinfo.image_width = (JDIMENSION)w;
  cinfo.image_height = (JDIMENSION)h;
  cinfo.input_components = c;
  cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = (JSAMPROW)(px + (size_t)cinfo.next_scanline * w * c);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  /* Copy into malloc'd memory so callers free() it like the rest. */
  uint8_t *b = malloc(out_len);
  if (b) memcpy(b, out, out_len);
  free(out);
  *len = out_len;
  return b;
}

long tu_rss_kib(int peak) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  const char *key = peak ? "VmHWM:" : "VmRSS:";
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, strlen(key)) == 0) {
      v = strtol(line + strlen(key), NULL, 10);
      break;
    }
  }
  fclose(f);
  return v;
}

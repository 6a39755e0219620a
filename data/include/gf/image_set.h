/* image_set.h - image sets at their native size, as `ganflow fid` reads
 * them: a folder of PNG/JPEG files or an IDX / CIFAR-10 dataset, every
 * image at its own geometry (data/src/image_set.c). */
#ifndef GF_IMAGE_SET_H
#define GF_IMAGE_SET_H

#include <stdbool.h>
#include <stdint.h>

#include "gf/data_parse.h"
#include "gf/status.h"

/* n images, each c x h x w 8-bit planar (grey or R, G, B planes). When
 * every image has the same h x w the set is `uniform`: pixels holds them
 * back to back (grey ones replicated to RGB when the set mixes grey and
 * colour), else items holds each image on its own. */
typedef struct gf_img_set {
  int64_t n;          /* images, >= 1 */
  bool uniform;
  uint8_t *pixels;    /* uniform: n * c * h * w bytes, owned; else NULL */
  int c, h, w;        /* uniform: the shared geometry; else 0 */
  gf_image *items;    /* not uniform: n images (px owned); else NULL */
  int64_t skipped;    /* files skipped: not .png/.jpg/.jpeg (folders) */
  char kind[16];      /* "folder", "idx", "cifar10" */
} gf_img_set;

/* Reads path: a dataset ganflow-train reads as IDX or CIFAR-10 (gf/data.h:
 * every image, at its native size), else a folder searched recursively for
 * .png/.jpg/.jpeg files (any case; hidden entries skipped, directory links
 * not followed, strcmp order), each decoded at its own size by the
 * dataset decoders (alpha dropped, palettes expanded: PIL's
 * convert('RGB')). Errors name the file: a missing or empty folder, a file
 * that does not decode (truncated, not an image). On success *set owns its
 * memory (gf_img_set_free); on failure it is empty. */
gf_status gf_img_set_load(const char *path, gf_img_set *set, gf_err *err);
/* Frees what set owns and zeroes it; accepts NULL and an empty set. */
void gf_img_set_free(gf_img_set *set);

/* Copies image im into dst (c * im->h * im->w bytes, caller's) as c planes;
 * c >= im->c: a grey image is replicated into each plane. */
void gf_img_put_planes(const gf_image *im, int c, uint8_t *dst);

#endif

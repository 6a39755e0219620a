/* checkpoint_internal.h - limits shared by checkpoint.c and inspect.c;
 * internal to gf_trainer, not installed. */
#ifndef GF_CHECKPOINT_INTERNAL_H
#define GF_CHECKPOINT_INTERNAL_H

#include "gf/net.h"

/* Tensors of a checkpoint: value + two Adam moments per tensor of G and D,
 * plus the two step counters. */
#define GF_CKPT_MAX_TENSORS (2 * 3 * GF_NET_MAX_TENSORS + 2)
/* Longest tensor name: a parameter name plus ".adam_m". */
#define GF_CKPT_TENSOR_NAME_MAX (GF_PARAM_NAME_MAX + 16)
/* Longest path built here (directory + file name). */
#define GF_CKPT_PATH_MAX 4096

#endif

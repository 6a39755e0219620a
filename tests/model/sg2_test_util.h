/* sg2_test_util.h - the StyleGAN2 golden tests' shared readers
 * (test_sg2_nets.c, test_sg2_reg.c): golden tensors as CPU tensors, device
 * copies, the CPU ctx, a case's gf_sg2_config from a golden file's
 * metadata (make_sg2_nets_golden.py's keys). Test code only: every helper
 * exits the test on failure. */
#ifndef GF_TEST_SG2_TEST_UTIL_H
#define GF_TEST_SG2_TEST_UTIL_H

#include "gf/safetensors.h"
#include "gf/sg2_net.h"

/* An owned CPU f32 copy of golden tensor name (a 0-d tensor as [1]). */
gf_tensor sg2t_gold(const gf_st_file *f, const char *name);
/* An owned copy of t (any device) on dev. */
gf_tensor sg2t_on_dev(const gf_tensor *t, gf_device dev);
/* A CPU ctx of `threads` threads; the caller frees it. */
void sg2t_ctx_cpu(gf_ctx *ctx, int threads);
/* A CUDA ctx on device 0: 0, or 77 (the test's skip status) after printing
 * why when there is no usable device; exits 1 when the device is there but
 * the ctx cannot be made. */
int sg2t_ctx_cuda(gf_ctx *ctx);
/* Integer metadata k of f. */
int sg2t_meta_int(const gf_st_file *f, const char *k);
/* The training tests' tiny network: 32x32 RGB, z and w 32, channels
 * 256/16, 2 mapping layers, mbstd groups of 2, no clamp, resnet D. */
gf_sg2_config sg2t_tiny_config(void);
/* The config of a golden case: the tiny preset with the sizes of f's
 * metadata (d_resnet 1 when absent). */
gf_sg2_config sg2t_case_config(const gf_st_file *f);

#endif

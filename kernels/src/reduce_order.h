/* reduce_order.h - the summation order that the CPU and the CUDA backend
 * share for the sums of the GAN ops (hinge, mean, spectral normalization),
 * so that both give the same bits. Private to kernels/; plain C and C++
 * (included by .c and .cu files).
 *
 * Lane sums: a sum of n terms is taken in double by GF_RED_LANES lanes,
 * lane j adding the terms j, j + L, j + 2L, ... in index order, starting
 * from 0.0; the lane sums are then combined by the tree
 *   p[j] += p[j + h]  for j < h,  h = L/2, L/4, ..., 1   (the sum is p[0]).
 * On CUDA that is one block of L threads and a shared-memory tree; on the
 * CPU a loop over blocks of L terms (it vectorizes) and the same tree.
 * Terms are formed identically on both sides: a product of two f32 values
 * is exact in double, so an FMA contraction of `p += a * b` changes
 * nothing.
 *
 * Column sums of spectral normalization (W^T u, W [R, K]): for each k, the
 * rows are taken in chunks of GF_SN_ROW_CHUNK; a chunk's partial sums its
 * rows in order (double, from 0.0), and the partials are added in chunk
 * order (from 0.0). Each column is independent, so threads and blocks may
 * split the columns any way. */
#ifndef GF_REDUCE_ORDER_H
#define GF_REDUCE_ORDER_H

#define GF_RED_LANES 256 /* a power of two */
#define GF_SN_ROW_CHUNK 64

#endif

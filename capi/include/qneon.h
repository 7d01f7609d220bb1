/* qneon C API: quantized softmax, log-softmax, logistic and tanh for int8, uint8
 * and int16, bit-exact with TFLite; int8 add, sub, mul, NoNorm, GEMM and matmul; float
 * kernels and softmax cross-entropy. Every fallible call returns a QneonStatus;
 * qneon_last_error_message() says why a call failed. SPDX-License-Identifier: Apache-2.0 */

#ifndef QNEON_H
#define QNEON_H

/* Generated from capi/src by `cargo xtask capi-header` (cbindgen); do not edit. */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

// The result of every fallible call. `QNEON_STATUS_OK` is 0; on anything
// else `qneon_last_error_message()` says why.
typedef enum QneonStatus {
  // Success.
  QNEON_STATUS_OK = 0,
  // A pointer that must not be null was null (a buffer with a length
  // above 0, a handle, or the handle output of `create`).
  QNEON_STATUS_NULL_POINTER = 1,
  // A parameter outside its domain: a scale, zero point, `beta`,
  // `integer_bits`, an output quantization the op does not accept, an
  // enum value out of range, a misaligned pointer, overlapping buffers.
  QNEON_STATUS_INVALID_ARGUMENT = 2,
  // Buffer lengths that do not fit: a length whose byte size overflows,
  // a `row_len` of 0 or one that does not divide the length.
  QNEON_STATUS_LENGTH = 3,
  // The op, element type and method combination is not implemented.
  QNEON_STATUS_UNSUPPORTED = 4,
  // The requested backend is not available on this target or CPU.
  QNEON_STATUS_BACKEND_UNAVAILABLE = 5,
  // Memory could not be allocated.
  QNEON_STATUS_ALLOCATION = 6,
  // A bug in qneon: a panic was caught at the boundary.
  QNEON_STATUS_INTERNAL = 7,
} QneonStatus;

// The algorithm of an operator (qneon's `Method`); passed as `uint32_t`.
enum QneonMethod
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  // Integer-only fixed point, bit-exact with TFLite's reference kernels.
  QNEON_METHOD_FIXED_POINT = 0,
  // TFLite's table kernels (its interpreter's builtin kernels), bit-exact.
  QNEON_METHOD_LUT = 1,
  // A table of the fixed-point results (int8/uint8 logistic and tanh).
  QNEON_METHOD_LUT_FIXED_POINT = 2,
  // Dequantize, compute in `float`, requantize (within 1 LSB).
  QNEON_METHOD_DEQUANT_F32 = 3,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum QneonMethod QneonMethod;
#else
typedef uint32_t QneonMethod;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// The instruction set a `run` uses (qneon's `Backend`, or the best one);
// passed as `uint32_t`. It never changes a result byte.
enum QneonBackend
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  // The fastest available here (NEON on aarch64, else scalar).
  QNEON_BACKEND_BEST = 0,
  // Portable scalar code, the reference.
  QNEON_BACKEND_SCALAR = 1,
  // aarch64 NEON.
  QNEON_BACKEND_NEON = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum QneonBackend QneonBackend;
#else
typedef uint32_t QneonBackend;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// How a quantized multiplier is applied (qneon's `Rounding`); passed as
// `uint32_t`.
enum QneonRounding
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  // One rounding of the 64-bit product (LiteRT 2.x, XNNPACK).
  QNEON_ROUNDING_SINGLE = 0,
  // gemmlowp's two roundings (TensorFlow 2.19's TFLite, TFLite Micro).
  QNEON_ROUNDING_DOUBLE = 1,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum QneonRounding QneonRounding;
#else
typedef uint32_t QneonRounding;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// How a GEMM's accumulators are scaled to the output (qneon's
// `Requantization`); passed as `uint32_t`. The first two values equal
// `QneonRounding`'s.
enum QneonRequantization
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  // The quantized multiplier in single rounding.
  QNEON_REQUANTIZATION_SINGLE = 0,
  // The quantized multiplier in double rounding.
  QNEON_REQUANTIZATION_DOUBLE = 1,
  // `round(double(acc) * real)`: LiteRT's reference fully connected.
  QNEON_REQUANTIZATION_REAL_F64 = 2,
  // `float(acc) * scale` rounded to even, the scale in `float`: the
  // XNNPACK delegate's fully connected.
  QNEON_REQUANTIZATION_XNNPACK_F32 = 3,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum QneonRequantization QneonRequantization;
#else
typedef uint32_t QneonRequantization;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// The activation fused into an int8 op's output clamp (qneon's
// `FusedActivation`); passed as `uint32_t`.
enum QneonActivation
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  // No clamp beyond the int8 range.
  QNEON_ACTIVATION_NONE = 0,
  // `max(x, 0)`.
  QNEON_ACTIVATION_RELU = 1,
  // `min(max(x, 0), 6)`.
  QNEON_ACTIVATION_RELU6 = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum QneonActivation QneonActivation;
#else
typedef uint32_t QneonActivation;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// The algorithm of `qneon_f32_softmax` (qneon's `f32::SoftmaxVariant`);
// passed as `uint32_t`.
enum QneonSoftmaxVariant
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  // Maximum, then `exp` stored and summed, then scaled (within 3 ulp).
  QNEON_SOFTMAX_VARIANT_TWO_PASS = 0,
  // A running maximum and rescaled sum, then `exp` again (within 3.5 ulp).
  QNEON_SOFTMAX_VARIANT_ONLINE = 1,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum QneonSoftmaxVariant QneonSoftmaxVariant;
#else
typedef uint32_t QneonSoftmaxVariant;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// How a loss combines its per-position values (qneon's
// `loss::Reduction`); passed as `uint32_t`.
enum QneonReduction
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  // Every position's loss.
  QNEON_REDUCTION_NONE = 0,
  // Their sum.
  QNEON_REDUCTION_SUM = 1,
  // Their sum over the sum of the target weights not ignored (PyTorch's
  // default).
  QNEON_REDUCTION_MEAN = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum QneonReduction QneonReduction;
#else
typedef uint32_t QneonReduction;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// A prepared int8 add (qneon's `Add`).
typedef struct QneonAdd QneonAdd;

// A prepared softmax cross-entropy (qneon's `loss::CrossEntropy`, its
// class weights owned).
typedef struct QneonCrossEntropy QneonCrossEntropy;

// A prepared int8 fully connected layer (qneon's `Gemm`): weights packed.
typedef struct QneonGemm QneonGemm;

// A prepared log-softmax on int8 data (qneon's `LogSoftmax<i8>`).
typedef struct QneonLogSoftmaxI8 QneonLogSoftmaxI8;

// A prepared log-softmax on uint8 data (qneon's `LogSoftmax<u8>`).
typedef struct QneonLogSoftmaxU8 QneonLogSoftmaxU8;

// A prepared logistic on int16 data (qneon's `Logistic<i16>`).
typedef struct QneonLogisticI16 QneonLogisticI16;

// A prepared logistic on int8 data (qneon's `Logistic<i8>`).
typedef struct QneonLogisticI8 QneonLogisticI8;

// A prepared logistic on uint8 data (qneon's `Logistic<u8>`).
typedef struct QneonLogisticU8 QneonLogisticU8;

// A prepared int8 matrix product of two run-time operands (qneon's
// `MatMul`, TFLite's int8 `BATCH_MATMUL` for one matrix).
typedef struct QneonMatMul QneonMatMul;

// A prepared int8 multiply (qneon's `Mul`).
typedef struct QneonMul QneonMul;

// A prepared int8 NoNorm (qneon's `NoNorm`).
typedef struct QneonNoNorm QneonNoNorm;

// A prepared cross-entropy of int8 logits.
typedef struct QneonQuantizedCrossEntropyI8 QneonQuantizedCrossEntropyI8;

// A prepared cross-entropy of uint8 logits.
typedef struct QneonQuantizedCrossEntropyU8 QneonQuantizedCrossEntropyU8;

// A prepared softmax on int16 data (qneon's `Softmax<i16>`).
typedef struct QneonSoftmaxI16 QneonSoftmaxI16;

// A prepared softmax on int8 data (qneon's `Softmax<i8>`).
typedef struct QneonSoftmaxI8 QneonSoftmaxI8;

// A prepared softmax on uint8 data (qneon's `Softmax<u8>`).
typedef struct QneonSoftmaxU8 QneonSoftmaxU8;

// A prepared int8 subtract (qneon's `Sub`).
typedef struct QneonSub QneonSub;

// A prepared SVDF with int16 state (qneon's `Svdf<i16>`).
typedef struct QneonSvdfI16 QneonSvdfI16;

// A prepared tanh on int16 data (qneon's `Tanh<i16>`).
typedef struct QneonTanhI16 QneonTanhI16;

// A prepared tanh on int8 data (qneon's `Tanh<i8>`).
typedef struct QneonTanhI8 QneonTanhI8;

// A prepared tanh on uint8 data (qneon's `Tanh<u8>`).
typedef struct QneonTanhU8 QneonTanhU8;

// Per-tensor affine quantization: `real = scale * (q - zero_point)`.
typedef struct QneonQuantParams {
  // Real value of one quantization step; finite and > 0.
  float scale;
  // The quantized value of real 0; within the element type's range.
  int32_t zero_point;
} QneonQuantParams;

// The options of a cross-entropy (PyTorch's `cross_entropy` arguments).
typedef struct QneonCrossEntropyOptions {
  // Classes `C`, at least 1.
  size_t classes;
  // A `QneonReduction`.
  uint32_t reduction;
  // Null for every class weight 1; else `classes` weights, each finite
  // and >= 0 (copied by create).
  const float *weights;
  // Whether targets equal to `ignore_index` are skipped (loss 0, gradient
  // 0, not counted by the mean); if false every target must be a class.
  bool has_ignore_index;
  // The target value skipped when `has_ignore_index`.
  int64_t ignore_index;
  // Label smoothing in [0, 1].
  float label_smoothing;
} QneonCrossEntropyOptions;

// What forward saves per position for backward (qneon's `LogSumExp`):
// `ln sum_c e^(x_c - max)` and the position's maximum logit.
typedef struct QneonLogSumExp {
  // `ln sum_c e^(x_c - max)`.
  double ln_sum;
  // The maximum logit.
  float max;
} QneonLogSumExp;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// Prepares `out = a + b` on int8 data (TFLite's int8 `ADD`): validates
// the three quantizations, `activation` (a `QneonActivation`) and
// `rounding` (a `QneonRounding`), then writes a new handle to `*out`.
// Free it with `qneon_add_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_add_create(struct QneonQuantParams a,
                                  struct QneonQuantParams b,
                                  struct QneonQuantParams output,
                                  uint32_t activation,
                                  uint32_t rounding,
                                  struct QneonAdd **out);

// `output[i] = a[i] + b[i]` for `i < len`, on `backend` (a `QneonBackend`).
//
// # Safety
// `op` must be null or a live handle; `a`, `b` null or readable and
// `output` null or writable for `len` elements, during the call.
enum QneonStatus qneon_add_run(const struct QneonAdd *op,
                               const int8_t *a,
                               const int8_t *b,
                               int8_t *output,
                               size_t len,
                               uint32_t backend);

// `output[i] = a[i % a_len] + b[i % b_len]` for `i < len`, on `backend`:
// an operand of 1 element is a repeated value, one of `len` elements a
// plain operand, one of another length a row repeated along the output
// (`len` a multiple of it; two rows of one length).
//
// # Safety
// `op` must be null or a live handle; `a` null or readable for `a_len`
// elements, `b` for `b_len`, `output` null or writable for `len`, during
// the call.
enum QneonStatus qneon_add_run_broadcast(const struct QneonAdd *op,
                                         const int8_t *a,
                                         size_t a_len,
                                         const int8_t *b,
                                         size_t b_len,
                                         int8_t *output,
                                         size_t len,
                                         uint32_t backend);

// Frees a handle made by `qneon_add_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_add_destroy(struct QneonAdd *op);

// Prepares `out = a - b` on int8 data (TFLite's int8 `SUB`), as
// `qneon_add_create`. Free it with `qneon_sub_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_sub_create(struct QneonQuantParams a,
                                  struct QneonQuantParams b,
                                  struct QneonQuantParams output,
                                  uint32_t activation,
                                  uint32_t rounding,
                                  struct QneonSub **out);

// `output[i] = a[i] - b[i]` for `i < len`, on `backend` (a `QneonBackend`).
//
// # Safety
// As `qneon_add_run`.
enum QneonStatus qneon_sub_run(const struct QneonSub *op,
                               const int8_t *a,
                               const int8_t *b,
                               int8_t *output,
                               size_t len,
                               uint32_t backend);

// `output[i] = a[i % a_len] - b[i % b_len]`, as `qneon_add_run_broadcast`.
//
// # Safety
// As `qneon_add_run_broadcast`.
enum QneonStatus qneon_sub_run_broadcast(const struct QneonSub *op,
                                         const int8_t *a,
                                         size_t a_len,
                                         const int8_t *b,
                                         size_t b_len,
                                         int8_t *output,
                                         size_t len,
                                         uint32_t backend);

// Frees a handle made by `qneon_sub_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_sub_destroy(struct QneonSub *op);

// Prepares `out = a * b` on int8 data (TFLite's int8 `MUL`), as
// `qneon_add_create`. Free it with `qneon_mul_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_mul_create(struct QneonQuantParams a,
                                  struct QneonQuantParams b,
                                  struct QneonQuantParams output,
                                  uint32_t activation,
                                  uint32_t rounding,
                                  struct QneonMul **out);

// `output[i] = a[i] * b[i]` for `i < len`, on `backend` (a `QneonBackend`).
//
// # Safety
// As `qneon_add_run`.
enum QneonStatus qneon_mul_run(const struct QneonMul *op,
                               const int8_t *a,
                               const int8_t *b,
                               int8_t *output,
                               size_t len,
                               uint32_t backend);

// `output[i] = a[i % a_len] * b[i % b_len]`, as `qneon_add_run_broadcast`.
//
// # Safety
// As `qneon_add_run_broadcast`.
enum QneonStatus qneon_mul_run_broadcast(const struct QneonMul *op,
                                         const int8_t *a,
                                         size_t a_len,
                                         const int8_t *b,
                                         size_t b_len,
                                         int8_t *output,
                                         size_t len,
                                         uint32_t backend);

// Frees a handle made by `qneon_mul_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_mul_destroy(struct QneonMul *op);

// Prepares logistic on int8 data: validates the `input` and `output`
// quantization and `method` (a `QneonMethod`), then writes a new
// handle to `*out`. Free it with `qneon_logistic_i8_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_logistic_i8_create(struct QneonQuantParams input,
                                          struct QneonQuantParams output,
                                          uint32_t method,
                                          struct QneonLogisticI8 **out);

// Runs logistic of each element of `input[0..len]` into `output[0..len]` on `backend` (a
// `QneonBackend`).
//
// # Safety
// `op` must be null or a live handle; `input` null or readable for `len`
// elements and `output` null or writable for `len` elements, during the
// call.
enum QneonStatus qneon_logistic_i8_run(const struct QneonLogisticI8 *op,
                                       const int8_t *input,
                                       int8_t *output,
                                       size_t len,
                                       uint32_t backend);

// Frees a handle made by `qneon_logistic_i8_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_logistic_i8_destroy(struct QneonLogisticI8 *op);

// The output quantization `qneon_logistic_i8_create` requires (TFLite's).
struct QneonQuantParams qneon_logistic_i8_output_quantization(void);

// Prepares logistic on uint8 data: validates the `input` and `output`
// quantization and `method` (a `QneonMethod`), then writes a new
// handle to `*out`. Free it with `qneon_logistic_u8_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_logistic_u8_create(struct QneonQuantParams input,
                                          struct QneonQuantParams output,
                                          uint32_t method,
                                          struct QneonLogisticU8 **out);

// Runs logistic of each element of `input[0..len]` into `output[0..len]` on `backend` (a
// `QneonBackend`).
//
// # Safety
// `op` must be null or a live handle; `input` null or readable for `len`
// elements and `output` null or writable for `len` elements, during the
// call.
enum QneonStatus qneon_logistic_u8_run(const struct QneonLogisticU8 *op,
                                       const uint8_t *input,
                                       uint8_t *output,
                                       size_t len,
                                       uint32_t backend);

// Frees a handle made by `qneon_logistic_u8_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_logistic_u8_destroy(struct QneonLogisticU8 *op);

// The output quantization `qneon_logistic_u8_create` requires (TFLite's).
struct QneonQuantParams qneon_logistic_u8_output_quantization(void);

// Prepares logistic on int16 data: validates the `input` and `output`
// quantization and `method` (a `QneonMethod`), then writes a new
// handle to `*out`. Free it with `qneon_logistic_i16_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_logistic_i16_create(struct QneonQuantParams input,
                                           struct QneonQuantParams output,
                                           uint32_t method,
                                           struct QneonLogisticI16 **out);

// Runs logistic of each element of `input[0..len]` into `output[0..len]` on `backend` (a
// `QneonBackend`).
//
// # Safety
// `op` must be null or a live handle; `input` null or readable for `len`
// elements and `output` null or writable for `len` elements, during the
// call.
enum QneonStatus qneon_logistic_i16_run(const struct QneonLogisticI16 *op,
                                        const int16_t *input,
                                        int16_t *output,
                                        size_t len,
                                        uint32_t backend);

// Frees a handle made by `qneon_logistic_i16_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_logistic_i16_destroy(struct QneonLogisticI16 *op);

// The output quantization `qneon_logistic_i16_create` requires (TFLite's).
struct QneonQuantParams qneon_logistic_i16_output_quantization(void);

// Prepares tanh on int8 data: validates the `input` and `output`
// quantization and `method` (a `QneonMethod`), then writes a new
// handle to `*out`. Free it with `qneon_tanh_i8_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_tanh_i8_create(struct QneonQuantParams input,
                                      struct QneonQuantParams output,
                                      uint32_t method,
                                      struct QneonTanhI8 **out);

// Runs tanh of each element of `input[0..len]` into `output[0..len]` on `backend` (a
// `QneonBackend`).
//
// # Safety
// `op` must be null or a live handle; `input` null or readable for `len`
// elements and `output` null or writable for `len` elements, during the
// call.
enum QneonStatus qneon_tanh_i8_run(const struct QneonTanhI8 *op,
                                   const int8_t *input,
                                   int8_t *output,
                                   size_t len,
                                   uint32_t backend);

// Frees a handle made by `qneon_tanh_i8_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_tanh_i8_destroy(struct QneonTanhI8 *op);

// The output quantization `qneon_tanh_i8_create` requires (TFLite's).
struct QneonQuantParams qneon_tanh_i8_output_quantization(void);

// Prepares tanh on uint8 data: validates the `input` and `output`
// quantization and `method` (a `QneonMethod`), then writes a new
// handle to `*out`. Free it with `qneon_tanh_u8_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_tanh_u8_create(struct QneonQuantParams input,
                                      struct QneonQuantParams output,
                                      uint32_t method,
                                      struct QneonTanhU8 **out);

// Runs tanh of each element of `input[0..len]` into `output[0..len]` on `backend` (a
// `QneonBackend`).
//
// # Safety
// `op` must be null or a live handle; `input` null or readable for `len`
// elements and `output` null or writable for `len` elements, during the
// call.
enum QneonStatus qneon_tanh_u8_run(const struct QneonTanhU8 *op,
                                   const uint8_t *input,
                                   uint8_t *output,
                                   size_t len,
                                   uint32_t backend);

// Frees a handle made by `qneon_tanh_u8_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_tanh_u8_destroy(struct QneonTanhU8 *op);

// The output quantization `qneon_tanh_u8_create` requires (TFLite's).
struct QneonQuantParams qneon_tanh_u8_output_quantization(void);

// Prepares tanh on int16 data: validates the `input` and `output`
// quantization and `method` (a `QneonMethod`), then writes a new
// handle to `*out`. Free it with `qneon_tanh_i16_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_tanh_i16_create(struct QneonQuantParams input,
                                       struct QneonQuantParams output,
                                       uint32_t method,
                                       struct QneonTanhI16 **out);

// Runs tanh of each element of `input[0..len]` into `output[0..len]` on `backend` (a
// `QneonBackend`).
//
// # Safety
// `op` must be null or a live handle; `input` null or readable for `len`
// elements and `output` null or writable for `len` elements, during the
// call.
enum QneonStatus qneon_tanh_i16_run(const struct QneonTanhI16 *op,
                                    const int16_t *input,
                                    int16_t *output,
                                    size_t len,
                                    uint32_t backend);

// Frees a handle made by `qneon_tanh_i16_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_tanh_i16_destroy(struct QneonTanhI16 *op);

// The output quantization `qneon_tanh_i16_create` requires (TFLite's).
struct QneonQuantParams qneon_tanh_i16_output_quantization(void);

// The message of the last call on this thread that failed ("" if none
// has). The pointer stays valid until the next failing call on this thread;
// copy the text to keep it.
const char *qneon_last_error_message(void);

// Softmax of each `row_len`-long row of `input[0..len]` into
// `output[0..len]`, with `variant` (a `QneonSoftmaxVariant`) on `backend`
// (a `QneonBackend`). Stable for any input (see qneon's `f32::softmax`
// for infinities and NaN).
//
// # Safety
// `input` must be null or readable and `output` null or writable for
// `len` elements, during the call.
enum QneonStatus qneon_f32_softmax(const float *input,
                                   float *output,
                                   size_t len,
                                   size_t row_len,
                                   uint32_t variant,
                                   uint32_t backend);

// Log-softmax of each `row_len`-long row of `input[0..len]` into
// `output[0..len]` on `backend`.
//
// # Safety
// As `qneon_f32_softmax`.
enum QneonStatus qneon_f32_log_softmax(const float *input,
                                       float *output,
                                       size_t len,
                                       size_t row_len,
                                       uint32_t backend);

// The logistic sigmoid `1 / (1 + e^-x)` of each element of
// `input[0..len]` into `output[0..len]` on `backend`.
//
// # Safety
// As `qneon_f32_softmax`.
enum QneonStatus qneon_f32_logistic(const float *input,
                                    float *output,
                                    size_t len,
                                    uint32_t backend);

// `tanh` of each element of `input[0..len]` into `output[0..len]` on
// `backend`.
//
// # Safety
// As `qneon_f32_softmax`.
enum QneonStatus qneon_f32_tanh(const float *input, float *output, size_t len, uint32_t backend);

// `e^x` of each element of `input[0..len]` into `output[0..len]` on
// `backend`.
//
// # Safety
// As `qneon_f32_softmax`.
enum QneonStatus qneon_f32_exp(const float *input, float *output, size_t len, uint32_t backend);

// The logistic's gradient from its output: `dx[i] = y[i] (1 - y[i])
// dy[i]` for `i < len`, on `backend`.
//
// # Safety
// `y` and `dy` must be null or readable and `dx` null or writable for
// `len` elements, during the call.
enum QneonStatus qneon_f32_logistic_backward(const float *y,
                                             const float *dy,
                                             float *dx,
                                             size_t len,
                                             uint32_t backend);

// `[seq, heads * head_dim]` (row-major) to `[heads, seq, head_dim]`, int8 elements: `input` and `output` each hold `seq * heads *
// head_dim` elements (`heads` and `head_dim` at least 1).
//
// # Safety
// `input` must be null or readable and `output` null or writable for
// `seq * heads * head_dim` elements, during the call.
enum QneonStatus qneon_split_heads_i8(const int8_t *input,
                                      int8_t *output,
                                      size_t seq,
                                      size_t heads,
                                      size_t head_dim);

// `[heads, seq, head_dim]` back to `[seq, heads * head_dim]`, int8 elements: `input` and `output` each hold `seq * heads *
// head_dim` elements (`heads` and `head_dim` at least 1).
//
// # Safety
// `input` must be null or readable and `output` null or writable for
// `seq * heads * head_dim` elements, during the call.
enum QneonStatus qneon_merge_heads_i8(const int8_t *input,
                                      int8_t *output,
                                      size_t seq,
                                      size_t heads,
                                      size_t head_dim);

// `[seq, heads * head_dim]` (row-major) to `[heads, seq, head_dim]`, uint8 elements: `input` and `output` each hold `seq * heads *
// head_dim` elements (`heads` and `head_dim` at least 1).
//
// # Safety
// `input` must be null or readable and `output` null or writable for
// `seq * heads * head_dim` elements, during the call.
enum QneonStatus qneon_split_heads_u8(const uint8_t *input,
                                      uint8_t *output,
                                      size_t seq,
                                      size_t heads,
                                      size_t head_dim);

// `[heads, seq, head_dim]` back to `[seq, heads * head_dim]`, uint8 elements: `input` and `output` each hold `seq * heads *
// head_dim` elements (`heads` and `head_dim` at least 1).
//
// # Safety
// `input` must be null or readable and `output` null or writable for
// `seq * heads * head_dim` elements, during the call.
enum QneonStatus qneon_merge_heads_u8(const uint8_t *input,
                                      uint8_t *output,
                                      size_t seq,
                                      size_t heads,
                                      size_t head_dim);

// `[seq, heads * head_dim]` (row-major) to `[heads, seq, head_dim]`, int16 elements: `input` and `output` each hold `seq * heads *
// head_dim` elements (`heads` and `head_dim` at least 1).
//
// # Safety
// `input` must be null or readable and `output` null or writable for
// `seq * heads * head_dim` elements, during the call.
enum QneonStatus qneon_split_heads_i16(const int16_t *input,
                                       int16_t *output,
                                       size_t seq,
                                       size_t heads,
                                       size_t head_dim);

// `[heads, seq, head_dim]` back to `[seq, heads * head_dim]`, int16 elements: `input` and `output` each hold `seq * heads *
// head_dim` elements (`heads` and `head_dim` at least 1).
//
// # Safety
// `input` must be null or readable and `output` null or writable for
// `seq * heads * head_dim` elements, during the call.
enum QneonStatus qneon_merge_heads_i16(const int16_t *input,
                                       int16_t *output,
                                       size_t seq,
                                       size_t heads,
                                       size_t head_dim);

// `[seq, heads * head_dim]` (row-major) to `[heads, seq, head_dim]`, float elements: `input` and `output` each hold `seq * heads *
// head_dim` elements (`heads` and `head_dim` at least 1).
//
// # Safety
// `input` must be null or readable and `output` null or writable for
// `seq * heads * head_dim` elements, during the call.
enum QneonStatus qneon_split_heads_f32(const float *input,
                                       float *output,
                                       size_t seq,
                                       size_t heads,
                                       size_t head_dim);

// `[heads, seq, head_dim]` back to `[seq, heads * head_dim]`, float elements: `input` and `output` each hold `seq * heads *
// head_dim` elements (`heads` and `head_dim` at least 1).
//
// # Safety
// `input` must be null or readable and `output` null or writable for
// `seq * heads * head_dim` elements, during the call.
enum QneonStatus qneon_merge_heads_f32(const float *input,
                                       float *output,
                                       size_t seq,
                                       size_t heads,
                                       size_t head_dim);

// PyTorch's defaults for `classes` classes: mean reduction, no class
// weights, ignore index -100, no label smoothing.
struct QneonCrossEntropyOptions qneon_cross_entropy_default_options(size_t classes);

// Validates `options` and writes a new handle to `*out`; free it with
// `qneon_cross_entropy_destroy`.
//
// # Safety
// `options.weights` must be null or readable for `options.classes`
// elements during the call; `out` null or valid for writing one pointer.
enum QneonStatus qneon_cross_entropy_create(struct QneonCrossEntropyOptions options,
                                            struct QneonCrossEntropy **out);

// The loss of `logits` (`[N, C, inner]`, `inner` 1 for `[N, C]`;
// `logits_len` = `targets_len * C`) against `targets` (`[N, inner]`,
// class indices) into `out` (`targets_len` values for
// `QNEON_REDUCTION_NONE`, else 1), on `backend`. `saved`: null (with
// `saved_len` 0), or `targets_len` entries that receive each position's
// log-sum-exp for `qneon_cross_entropy_backward`.
//
// # Safety
// `op` must be null or a live handle; each buffer null or valid for its
// length (readable for `logits` and `targets`, writable for `out` and
// `saved`), during the call.
enum QneonStatus qneon_cross_entropy_forward(const struct QneonCrossEntropy *op,
                                             const float *logits,
                                             size_t logits_len,
                                             const int64_t *targets,
                                             size_t targets_len,
                                             size_t inner,
                                             float *out,
                                             size_t out_len,
                                             struct QneonLogSumExp *saved,
                                             size_t saved_len,
                                             uint32_t backend);

// The gradient of the loss with respect to `logits` into `grad`
// (`logits_len` values), from the `saved` log-sum-exps a forward of the
// same logits and targets wrote (`targets_len` entries) and the incoming
// gradient `grad_output` (`targets_len` values for `QNEON_REDUCTION_NONE`,
// else 1), on `backend`.
//
// # Safety
// `op` must be null or a live handle; each buffer null or valid for its
// length (writable for `grad`, readable for the others), during the call.
enum QneonStatus qneon_cross_entropy_backward(const struct QneonCrossEntropy *op,
                                              const float *logits,
                                              size_t logits_len,
                                              const int64_t *targets,
                                              size_t targets_len,
                                              size_t inner,
                                              const struct QneonLogSumExp *saved,
                                              size_t saved_len,
                                              const float *grad_output,
                                              size_t grad_output_len,
                                              float *grad,
                                              size_t grad_len,
                                              uint32_t backend);

// The negative log-likelihood of `log_probs` (`[N, C, inner]`, e.g. a
// log-softmax output) against `targets`, with the handle's options, into
// `out` (as forward), on `backend`.
//
// # Safety
// As `qneon_cross_entropy_forward`.
enum QneonStatus qneon_cross_entropy_nll(const struct QneonCrossEntropy *op,
                                         const float *log_probs,
                                         size_t log_probs_len,
                                         const int64_t *targets,
                                         size_t targets_len,
                                         size_t inner,
                                         float *out,
                                         size_t out_len,
                                         uint32_t backend);

// Frees a handle made by `qneon_cross_entropy_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_cross_entropy_destroy(struct QneonCrossEntropy *op);

// `ln p_target` at every position (log-softmax then a gather, without the
// log-softmax tensor): `logits` `[N, classes, inner]`, `targets`
// `[N, inner]` (each a class), `out` `targets_len` values, on `backend`.
//
// # Safety
// Each buffer must be null or valid for its length (writable for `out`,
// readable for the others) during the call.
enum QneonStatus qneon_target_log_probs(const float *logits,
                                        size_t logits_len,
                                        size_t classes,
                                        const int64_t *targets,
                                        size_t targets_len,
                                        size_t inner,
                                        float *out,
                                        size_t out_len,
                                        uint32_t backend);

// Validates `options`, the int8 logits' quantization `input` (its zero
// point does not change the loss) and `backend` (a `QneonBackend`, used by
// every forward), builds the table of `e^(-d scale)`, and writes a new
// handle to `*out`; free it with `qneon_quantized_cross_entropy_i8_destroy`.
//
// # Safety
// `options.weights` must be null or readable for `options.classes`
// elements during the call; `out` null or valid for writing one pointer.
enum QneonStatus qneon_quantized_cross_entropy_i8_create(struct QneonCrossEntropyOptions options,
                                                         struct QneonQuantParams input_q,
                                                         uint32_t backend,
                                                         struct QneonQuantizedCrossEntropyI8 **out);

// The loss of int8 `logits` (`[N, C, inner]`) against `targets`
// (`[N, inner]`) into `out`, as `qneon_cross_entropy_forward` with the
// dequantized logits (within a few float ulp of the exact loss).
//
// # Safety
// `op` must be null or a live handle; each buffer null or valid for its
// length (writable for `out`, readable for the others), during the call.
enum QneonStatus qneon_quantized_cross_entropy_i8_forward(const struct QneonQuantizedCrossEntropyI8 *op,
                                                          const int8_t *logits,
                                                          size_t logits_len,
                                                          const int64_t *targets,
                                                          size_t targets_len,
                                                          size_t inner,
                                                          float *out,
                                                          size_t out_len);

// Frees a handle made by `qneon_quantized_cross_entropy_i8_create` (null
// is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_quantized_cross_entropy_i8_destroy(struct QneonQuantizedCrossEntropyI8 *op);

// As `qneon_quantized_cross_entropy_i8_create`, for uint8 logits.
//
// # Safety
// As `qneon_quantized_cross_entropy_i8_create`.
enum QneonStatus qneon_quantized_cross_entropy_u8_create(struct QneonCrossEntropyOptions options,
                                                         struct QneonQuantParams input_q,
                                                         uint32_t backend,
                                                         struct QneonQuantizedCrossEntropyU8 **out);

// As `qneon_quantized_cross_entropy_i8_forward`, for uint8 logits.
//
// # Safety
// As `qneon_quantized_cross_entropy_i8_forward`.
enum QneonStatus qneon_quantized_cross_entropy_u8_forward(const struct QneonQuantizedCrossEntropyU8 *op,
                                                          const uint8_t *logits,
                                                          size_t logits_len,
                                                          const int64_t *targets,
                                                          size_t targets_len,
                                                          size_t inner,
                                                          float *out,
                                                          size_t out_len);

// Frees a handle made by `qneon_quantized_cross_entropy_u8_create` (null
// is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_quantized_cross_entropy_u8_destroy(struct QneonQuantizedCrossEntropyU8 *op);

// Prepares `output (m x n) = input (m x k) * weights^T`, requantized
// (TFLite's per-channel int8 `FULLY_CONNECTED`): `weights` `n x k` int8
// row-major, symmetric, row `c` with scale `weight_scales[c]` (`n`
// values); `bias` null for zeros or `n` int32 values in units of
// `input.scale * weight_scales[c]`; `activation` a `QneonActivation`;
// `requantization` a `QneonRequantization`. Packs the weights and writes a
// new handle to `*out`; free it with `qneon_gemm_destroy`.
//
// # Safety
// `weights` must be null or readable for `n * k` elements, `bias` and
// `weight_scales` null or readable for `n`, during the call; `out` null or
// valid for writing one pointer.
enum QneonStatus qneon_gemm_create(const int8_t *weights,
                                   size_t n,
                                   size_t k,
                                   const int32_t *bias,
                                   struct QneonQuantParams input_q,
                                   const float *weight_scales,
                                   struct QneonQuantParams output_q,
                                   uint32_t activation,
                                   uint32_t requantization,
                                   struct QneonGemm **out);

// Replaces the weights (`n x k` row-major, quantized with the scales
// given to create) and repacks them; `transposed`: `weights` is `k x n`
// row-major instead. Allocates nothing. Not concurrently with a `run` of
// the same handle.
//
// # Safety
// `op` must be null or a live handle nothing else uses during the call;
// `weights` null or readable for `len` elements.
enum QneonStatus qneon_gemm_set_weights(struct QneonGemm *op,
                                        const int8_t *weights,
                                        size_t len,
                                        bool transposed);

// `output (m x n) = input (m x k) * weights^T`, requantized, on
// `backend` (a `QneonBackend`): `input` holds `m * k` values, `output`
// `m * n`. Allocates nothing.
//
// # Safety
// `op` must be null or a live handle; `input` null or readable for
// `m * k` elements and `output` null or writable for `m * n`, during the
// call.
enum QneonStatus qneon_gemm_run(const struct QneonGemm *op,
                                const int8_t *input_data,
                                int8_t *output_data,
                                size_t m,
                                uint32_t backend);

// Writes the handle's output channels `n` and depth `k`.
//
// # Safety
// `op` must be null or a live handle; `n` and `k` null or writable.
enum QneonStatus qneon_gemm_shape(const struct QneonGemm *op, size_t *n, size_t *k);

// Frees a handle made by `qneon_gemm_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_gemm_destroy(struct QneonGemm *op);

// Prepares `output (m x n) = lhs (m x k) * rhs (k x n)`, requantized,
// `lhs` stored `k x m` when `adj_x`, `rhs` stored `n x k` when `adj_y`;
// `rounding` a `QneonRounding`. Writes a new handle to `*out`; free it
// with `qneon_matmul_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_matmul_create(size_t m,
                                     size_t n,
                                     size_t k,
                                     bool adj_x,
                                     bool adj_y,
                                     struct QneonQuantParams lhs,
                                     struct QneonQuantParams rhs,
                                     struct QneonQuantParams output_q,
                                     uint32_t rounding,
                                     struct QneonMatMul **out);

// Writes the scratch `qneon_matmul_run` needs: `*bytes` int8 values and
// `*words` int32 values.
//
// # Safety
// `op` must be null or a live handle; `bytes` and `words` null or
// writable.
enum QneonStatus qneon_matmul_scratch(const struct QneonMatMul *op, size_t *bytes, size_t *words);

// `output = lhs * rhs`, requantized, on `backend` (a `QneonBackend`):
// `lhs` `m * k` values, `rhs` `k * n`, `output` `m * n`, with
// `scratch_bytes` and `scratch_words` at least as long as
// `qneon_matmul_scratch` says (no allocation). Errors name any buffer of
// the wrong length.
//
// # Safety
// `op` must be null or a live handle; each buffer null or valid (readable
// for `lhs` and `rhs`, writable for the others) for its length, during
// the call.
enum QneonStatus qneon_matmul_run(const struct QneonMatMul *op,
                                  const int8_t *lhs,
                                  size_t lhs_len,
                                  const int8_t *rhs,
                                  size_t rhs_len,
                                  int8_t *output_data,
                                  size_t output_len,
                                  int8_t *scratch_bytes,
                                  size_t scratch_bytes_len,
                                  int32_t *scratch_words,
                                  size_t scratch_words_len,
                                  uint32_t backend);

// Frees a handle made by `qneon_matmul_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_matmul_destroy(struct QneonMatMul *op);

// Prepares NoNorm over `channels` channels from quantized parameters:
// `gamma[c]` int8 (symmetric, scale `gamma_scales[c]`), `beta[c]` int32 in
// units of `input.scale * gamma_scales[c]`, each array `channels` long;
// `activation` a `QneonActivation`. Writes a new handle to `*out`; free
// it with `qneon_no_norm_destroy`.
//
// # Safety
// `gamma`, `gamma_scales` and `beta` must be null or readable for
// `channels` elements during the call; `out` null or valid for writing
// one pointer.
enum QneonStatus qneon_no_norm_create(const int8_t *gamma,
                                      const float *gamma_scales,
                                      const int32_t *beta,
                                      size_t channels,
                                      struct QneonQuantParams input_q,
                                      struct QneonQuantParams output_q,
                                      uint32_t activation,
                                      struct QneonNoNorm **out);

// Prepares NoNorm from real gammas and betas (`channels` each; qneon's
// `NoNorm::from_f32`: each gamma quantized to +-127 steps of its own
// scale, each beta to the accumulator's units). As `qneon_no_norm_create`.
//
// # Safety
// `gamma` and `beta` must be null or readable for `channels` elements
// during the call; `out` null or valid for writing one pointer.
enum QneonStatus qneon_no_norm_create_f32(const float *gamma,
                                          const float *beta,
                                          size_t channels,
                                          struct QneonQuantParams input_q,
                                          struct QneonQuantParams output_q,
                                          uint32_t activation,
                                          struct QneonNoNorm **out);

// NoNorm of every `channels`-long row of `input[0..len]` into
// `output[0..len]` on `backend` (a `QneonBackend`); `len` a multiple of
// the channels.
//
// # Safety
// `op` must be null or a live handle; `input` null or readable and
// `output` null or writable for `len` elements, during the call.
enum QneonStatus qneon_no_norm_run(const struct QneonNoNorm *op,
                                   const int8_t *input,
                                   int8_t *output,
                                   size_t len,
                                   uint32_t backend);

// Frees a handle made by `qneon_no_norm_create` or `_create_f32` (null is
// ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_no_norm_destroy(struct QneonNoNorm *op);

// Softmax of each `row_len`-long row of raw Q31 values: `input[0..len]` in
// Q(`integer_bits`) (`integer_bits` in 0..=28), `output[0..len]` in Q0.31.
//
// # Safety
// `input` must be null or readable for `len` elements and `output` null or
// writable for `len` elements, during the call.
enum QneonStatus qneon_q31_softmax(const int32_t *input,
                                   uint32_t integer_bits,
                                   int32_t *output,
                                   size_t len,
                                   size_t row_len,
                                   uint32_t backend);

// Logistic of raw Q31 values: `input[0..len]` in Q(`integer_bits`),
// `output[0..len]` in Q0.31 ([0, 1)).
//
// # Safety
// `input` must be null or readable for `len` elements and `output` null or
// writable for `len` elements, during the call.
enum QneonStatus qneon_q31_logistic(const int32_t *input,
                                    uint32_t integer_bits,
                                    int32_t *output,
                                    size_t len,
                                    uint32_t backend);

// Tanh of raw Q31 values: `input[0..len]` in Q(`integer_bits`),
// `output[0..len]` in Q0.31 ([-1, 1)).
//
// # Safety
// `input` must be null or readable for `len` elements and `output` null or
// writable for `len` elements, during the call.
enum QneonStatus qneon_q31_tanh(const int32_t *input,
                                uint32_t integer_bits,
                                int32_t *output,
                                size_t len,
                                uint32_t backend);

// Quantizes `input[0..len]` to int8: `clamp(round(x / scale) + zero_point)`,
// rounding half away from zero, NaN to `zero_point` (TFLite's `QUANTIZE`).
//
// # Safety
// `input` must be null or readable for `len` elements and `output` null or
// writable for `len` elements, during the call.
enum QneonStatus qneon_quantize_i8(struct QneonQuantParams params,
                                   const float *input,
                                   int8_t *output,
                                   size_t len,
                                   uint32_t backend);

// Dequantizes int8 `input[0..len]`: `scale * (q - zero_point)` in `float`
// (TFLite's `DEQUANTIZE`).
//
// # Safety
// `input` must be null or readable for `len` elements and `output` null or
// writable for `len` elements, during the call.
enum QneonStatus qneon_dequantize_i8(struct QneonQuantParams params,
                                     const int8_t *input,
                                     float *output,
                                     size_t len,
                                     uint32_t backend);

// Quantizes `input[0..len]` to uint8: `clamp(round(x / scale) + zero_point)`,
// rounding half away from zero, NaN to `zero_point` (TFLite's `QUANTIZE`).
//
// # Safety
// `input` must be null or readable for `len` elements and `output` null or
// writable for `len` elements, during the call.
enum QneonStatus qneon_quantize_u8(struct QneonQuantParams params,
                                   const float *input,
                                   uint8_t *output,
                                   size_t len,
                                   uint32_t backend);

// Dequantizes uint8 `input[0..len]`: `scale * (q - zero_point)` in `float`
// (TFLite's `DEQUANTIZE`).
//
// # Safety
// `input` must be null or readable for `len` elements and `output` null or
// writable for `len` elements, during the call.
enum QneonStatus qneon_dequantize_u8(struct QneonQuantParams params,
                                     const uint8_t *input,
                                     float *output,
                                     size_t len,
                                     uint32_t backend);

// Quantizes `input[0..len]` to int16: `clamp(round(x / scale) + zero_point)`,
// rounding half away from zero, NaN to `zero_point` (TFLite's `QUANTIZE`).
//
// # Safety
// `input` must be null or readable for `len` elements and `output` null or
// writable for `len` elements, during the call.
enum QneonStatus qneon_quantize_i16(struct QneonQuantParams params,
                                    const float *input,
                                    int16_t *output,
                                    size_t len,
                                    uint32_t backend);

// Dequantizes int16 `input[0..len]`: `scale * (q - zero_point)` in `float`
// (TFLite's `DEQUANTIZE`).
//
// # Safety
// `input` must be null or readable for `len` elements and `output` null or
// writable for `len` elements, during the call.
enum QneonStatus qneon_dequantize_i16(struct QneonQuantParams params,
                                      const int16_t *input,
                                      float *output,
                                      size_t len,
                                      uint32_t backend);

// Prepares softmax on int8 data: validates the `input` and `output`
// quantization, `beta` and `method` (a `QneonMethod`), then writes a new
// handle to `*out`. Free it with `qneon_softmax_i8_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_softmax_i8_create(struct QneonQuantParams input,
                                         float beta,
                                         struct QneonQuantParams output,
                                         uint32_t method,
                                         struct QneonSoftmaxI8 **out);

// Runs softmax of each `row_len`-long row of `input[0..len]` into `output[0..len]` on `backend` (a
// `QneonBackend`).
//
// # Safety
// `op` must be null or a live handle; `input` null or readable for `len`
// elements and `output` null or writable for `len` elements, during the
// call.
enum QneonStatus qneon_softmax_i8_run(const struct QneonSoftmaxI8 *op,
                                      const int8_t *input,
                                      int8_t *output,
                                      size_t len,
                                      size_t row_len,
                                      uint32_t backend);

// Frees a handle made by `qneon_softmax_i8_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_softmax_i8_destroy(struct QneonSoftmaxI8 *op);

// The output quantization `qneon_softmax_i8_create` requires (TFLite's).
struct QneonQuantParams qneon_softmax_i8_output_quantization(void);

// Prepares softmax on uint8 data: validates the `input` and `output`
// quantization, `beta` and `method` (a `QneonMethod`), then writes a new
// handle to `*out`. Free it with `qneon_softmax_u8_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_softmax_u8_create(struct QneonQuantParams input,
                                         float beta,
                                         struct QneonQuantParams output,
                                         uint32_t method,
                                         struct QneonSoftmaxU8 **out);

// Runs softmax of each `row_len`-long row of `input[0..len]` into `output[0..len]` on `backend` (a
// `QneonBackend`).
//
// # Safety
// `op` must be null or a live handle; `input` null or readable for `len`
// elements and `output` null or writable for `len` elements, during the
// call.
enum QneonStatus qneon_softmax_u8_run(const struct QneonSoftmaxU8 *op,
                                      const uint8_t *input,
                                      uint8_t *output,
                                      size_t len,
                                      size_t row_len,
                                      uint32_t backend);

// Frees a handle made by `qneon_softmax_u8_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_softmax_u8_destroy(struct QneonSoftmaxU8 *op);

// The output quantization `qneon_softmax_u8_create` requires (TFLite's).
struct QneonQuantParams qneon_softmax_u8_output_quantization(void);

// Prepares softmax on int16 data: validates the `input` and `output`
// quantization, `beta` and `method` (a `QneonMethod`), then writes a new
// handle to `*out`. Free it with `qneon_softmax_i16_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_softmax_i16_create(struct QneonQuantParams input,
                                          float beta,
                                          struct QneonQuantParams output,
                                          uint32_t method,
                                          struct QneonSoftmaxI16 **out);

// Runs softmax of each `row_len`-long row of `input[0..len]` into `output[0..len]` on `backend` (a
// `QneonBackend`).
//
// # Safety
// `op` must be null or a live handle; `input` null or readable for `len`
// elements and `output` null or writable for `len` elements, during the
// call.
enum QneonStatus qneon_softmax_i16_run(const struct QneonSoftmaxI16 *op,
                                       const int16_t *input,
                                       int16_t *output,
                                       size_t len,
                                       size_t row_len,
                                       uint32_t backend);

// Frees a handle made by `qneon_softmax_i16_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_softmax_i16_destroy(struct QneonSoftmaxI16 *op);

// The output quantization `qneon_softmax_i16_create` requires (TFLite's).
struct QneonQuantParams qneon_softmax_i16_output_quantization(void);

// Prepares log-softmax on int8 data: validates the `input` and `output`
// quantization and `method` (a `QneonMethod`), then writes a new
// handle to `*out`. Free it with `qneon_log_softmax_i8_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_log_softmax_i8_create(struct QneonQuantParams input,
                                             struct QneonQuantParams output,
                                             uint32_t method,
                                             struct QneonLogSoftmaxI8 **out);

// Runs log-softmax of each `row_len`-long row of `input[0..len]` into `output[0..len]` on `backend` (a
// `QneonBackend`).
//
// # Safety
// `op` must be null or a live handle; `input` null or readable for `len`
// elements and `output` null or writable for `len` elements, during the
// call.
enum QneonStatus qneon_log_softmax_i8_run(const struct QneonLogSoftmaxI8 *op,
                                          const int8_t *input,
                                          int8_t *output,
                                          size_t len,
                                          size_t row_len,
                                          uint32_t backend);

// Frees a handle made by `qneon_log_softmax_i8_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_log_softmax_i8_destroy(struct QneonLogSoftmaxI8 *op);

// The output quantization `qneon_log_softmax_i8_create` requires (TFLite's).
struct QneonQuantParams qneon_log_softmax_i8_output_quantization(void);

// Prepares log-softmax on uint8 data: validates the `input` and `output`
// quantization and `method` (a `QneonMethod`), then writes a new
// handle to `*out`. Free it with `qneon_log_softmax_u8_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_log_softmax_u8_create(struct QneonQuantParams input,
                                             struct QneonQuantParams output,
                                             uint32_t method,
                                             struct QneonLogSoftmaxU8 **out);

// Runs log-softmax of each `row_len`-long row of `input[0..len]` into `output[0..len]` on `backend` (a
// `QneonBackend`).
//
// # Safety
// `op` must be null or a live handle; `input` null or readable for `len`
// elements and `output` null or writable for `len` elements, during the
// call.
enum QneonStatus qneon_log_softmax_u8_run(const struct QneonLogSoftmaxU8 *op,
                                          const uint8_t *input,
                                          uint8_t *output,
                                          size_t len,
                                          size_t row_len,
                                          uint32_t backend);

// Frees a handle made by `qneon_log_softmax_u8_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_log_softmax_u8_destroy(struct QneonLogSoftmaxU8 *op);

// The output quantization `qneon_log_softmax_u8_create` requires (TFLite's).
struct QneonQuantParams qneon_log_softmax_u8_output_quantization(void);

// Prepares an SVDF: `batch` rows of `input_size` int8 features, `filters`
// filters (a multiple of `rank`) remembering `memory` steps each, int16
// state and time weights (scale `weights_time_scale`), int8 feature
// weights (scale `weights_feature_scale`), `rounding` a `QneonRounding`.
// Writes a new handle to `*out`; free it with `qneon_svdf_i16_destroy`.
//
// # Safety
// `out` must be null or valid for writing one pointer.
enum QneonStatus qneon_svdf_i16_create(size_t batch,
                                       size_t input_size,
                                       size_t filters,
                                       size_t memory,
                                       size_t rank,
                                       struct QneonQuantParams input_q,
                                       float weights_feature_scale,
                                       float weights_time_scale,
                                       struct QneonQuantParams state_q,
                                       struct QneonQuantParams output_q,
                                       uint32_t rounding,
                                       struct QneonSvdfI16 **out);

// Elements of the state buffer `run` updates: `batch * filters * memory`.
//
// # Safety
// `op` must be null (0 is returned) or a live handle.
size_t qneon_svdf_i16_state_len(const struct QneonSvdfI16 *op);

// One time step on `backend` (a `QneonBackend`): shifts `state`
// (`qneon_svdf_i16_state_len` elements, updated in place), writes its
// newest column from `input` (`batch * input_size`) and writes `output`
// (`batch * filters / rank`). Weights: `weights_feature`
// (`filters * input_size`), `weights_time` (`filters * memory`), `bias`
// (`filters / rank` int32, or null for none).
//
// # Safety
// `op` must be null or a live handle; each pointer null or valid for its
// length during the call (`state` and `output` writable).
enum QneonStatus qneon_svdf_i16_run(const struct QneonSvdfI16 *op,
                                    const int8_t *input_data,
                                    const int8_t *weights_feature,
                                    const int16_t *weights_time,
                                    const int32_t *bias,
                                    int16_t *state,
                                    int8_t *output_data,
                                    uint32_t backend);

// Resets a state buffer of `len` elements (`qneon_svdf_i16_state_len`) to
// the state's zero point: the start of a new sequence, as TFLite's
// `ResetVariableTensors`.
//
// # Safety
// `op` must be null or a live handle; `state` null or writable for `len`
// elements during the call.
enum QneonStatus qneon_svdf_i16_reset_state(const struct QneonSvdfI16 *op,
                                            int16_t *state,
                                            size_t len);

// Frees a handle made by `qneon_svdf_i16_create` (null is ignored).
//
// # Safety
// `op` must be null or a live handle, not used after this call.
void qneon_svdf_i16_destroy(struct QneonSvdfI16 *op);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* QNEON_H */

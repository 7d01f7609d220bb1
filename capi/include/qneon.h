/* qneon C API: quantized softmax, log-softmax, logistic and tanh for int8, uint8
 * and int16, bit-exact with TFLite. Every fallible call returns a QneonStatus;
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

// A prepared softmax on int16 data (qneon's `Softmax<i16>`).
typedef struct QneonSoftmaxI16 QneonSoftmaxI16;

// A prepared softmax on int8 data (qneon's `Softmax<i8>`).
typedef struct QneonSoftmaxI8 QneonSoftmaxI8;

// A prepared softmax on uint8 data (qneon's `Softmax<u8>`).
typedef struct QneonSoftmaxU8 QneonSoftmaxU8;

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

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

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

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* QNEON_H */

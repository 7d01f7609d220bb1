/* qneon's C API beyond the activations: int8 add / sub / mul (with a
 * broadcast row and value), NoNorm, GEMM (packed weights, replaced
 * weights), matmul, the float kernels and softmax cross-entropy.
 *
 * Build as capi/examples/softmax.c (see there), with ops.c instead.
 *
 * Prints every parameter and input, then each call's output, one
 * `name: values` line each: int8 as two hex digits, int32 and float bit
 * patterns as eight, int64 and double as sixteen, quantization
 * parameters as `scale zero_point` (%.9g, which round-trips a float).
 * `cargo xtask capi` runs the same calls through the Rust library on the
 * printed inputs and compares every output bit. Errors go to stderr. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qneon.h"

static void print_i8(const char *name, const int8_t *v, size_t n) {
    printf("%s:", name);
    for (size_t i = 0; i < n; i++) {
        printf(" %02x", (unsigned)(uint8_t)v[i]);
    }
    printf("\n");
}

static void print_i32(const char *name, const int32_t *v, size_t n) {
    printf("%s:", name);
    for (size_t i = 0; i < n; i++) {
        printf(" %08lx", (unsigned long)(uint32_t)v[i]);
    }
    printf("\n");
}

static void print_i64(const char *name, const int64_t *v, size_t n) {
    printf("%s:", name);
    for (size_t i = 0; i < n; i++) {
        printf(" %016llx", (unsigned long long)(uint64_t)v[i]);
    }
    printf("\n");
}

static void print_f32(const char *name, const float *v, size_t n) {
    printf("%s:", name);
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        printf(" %08lx", (unsigned long)bits);
    }
    printf("\n");
}

static void print_q(const char *name, QneonQuantParams q) {
    printf("%s: %.9g %d\n", name, (double)q.scale, (int)q.zero_point);
}

/* Prints a failed call's status and reason; returns 1 on failure. */
static int failed(const char *what, QneonStatus status) {
    if (status == QNEON_STATUS_OK) {
        return 0;
    }
    fprintf(stderr, "%s: status %d: %s\n", what, (int)status, qneon_last_error_message());
    return 1;
}

/* Spread int8 values: repeats, both extremes, no short period. */
static int8_t byte_at(int i, int salt) {
    return (int8_t)((i * 73 + salt * 29 + (i * i) % 11) % 256 - 128);
}

/* Real values in about [-span, span]. */
static float real_at(int i, int salt, float span) {
    return span * (float)((i * 37 + salt * 53) % 101 - 50) / 50.0f;
}

#define BIN_LEN 70
#define BIN_ROW 7

static int binary(void) {
    const QneonQuantParams qa = {0.05f, -3}, qb = {0.08f, 7};
    const QneonQuantParams q_add = {0.1f, 2}, q_mul = {0.3f, -5};
    int8_t x[BIN_LEN], y[BIN_LEN], row[BIN_ROW], out[BIN_LEN];
    const int8_t scalar[1] = {-77};
    for (int i = 0; i < BIN_LEN; i++) {
        x[i] = byte_at(i, 1);
        y[i] = byte_at(i, 2);
    }
    for (int i = 0; i < BIN_ROW; i++) {
        row[i] = byte_at(i, 3);
    }
    print_q("binary.a", qa);
    print_q("binary.b", qb);
    print_q("binary.add_out", q_add);
    print_q("binary.mul_out", q_mul);
    print_i8("binary.x", x, BIN_LEN);
    print_i8("binary.y", y, BIN_LEN);
    print_i8("binary.row", row, BIN_ROW);
    print_i8("binary.scalar", scalar, 1);

    QneonAdd *add = NULL;
    QneonSub *sub = NULL;
    QneonMul *mul = NULL;
    int bad = failed("add create", qneon_add_create(qa, qb, q_add, QNEON_ACTIVATION_NONE,
                                                    QNEON_ROUNDING_SINGLE, &add)) ||
              failed("sub create", qneon_sub_create(qa, qb, q_add, QNEON_ACTIVATION_RELU,
                                                    QNEON_ROUNDING_DOUBLE, &sub)) ||
              failed("mul create", qneon_mul_create(qa, qb, q_mul, QNEON_ACTIVATION_RELU6,
                                                    QNEON_ROUNDING_SINGLE, &mul));
    if (!bad) {
        bad = failed("add", qneon_add_run(add, x, y, out, BIN_LEN, QNEON_BACKEND_BEST));
        print_i8("add", out, BIN_LEN);
        bad = bad || failed("sub", qneon_sub_run(sub, x, y, out, BIN_LEN, QNEON_BACKEND_BEST));
        print_i8("sub", out, BIN_LEN);
        bad = bad || failed("mul", qneon_mul_run(mul, x, y, out, BIN_LEN, QNEON_BACKEND_BEST));
        print_i8("mul", out, BIN_LEN);
        bad = bad || failed("add row", qneon_add_run_broadcast(add, x, BIN_LEN, row, BIN_ROW, out,
                                                               BIN_LEN, QNEON_BACKEND_BEST));
        print_i8("add.row", out, BIN_LEN);
        bad = bad || failed("mul scalar", qneon_mul_run_broadcast(mul, scalar, 1, y, BIN_LEN, out,
                                                                  BIN_LEN, QNEON_BACKEND_BEST));
        print_i8("mul.scalar", out, BIN_LEN);
        /* A row that does not divide the output: a length status. */
        QneonStatus s = qneon_sub_run_broadcast(sub, x, BIN_LEN, row, 4, out, BIN_LEN,
                                                QNEON_BACKEND_BEST);
        if (s != QNEON_STATUS_LENGTH) {
            fprintf(stderr, "expected a length status for a row of 4 along 70\n");
            bad = 1;
        }
    }
    qneon_add_destroy(add);
    qneon_sub_destroy(sub);
    qneon_mul_destroy(mul);
    return bad;
}

#define CH 12
#define NN_ROWS 5

static int no_norm(void) {
    const QneonQuantParams qi = {0.04f, 1}, qo = {0.05f, -2};
    int8_t gamma[CH], x[CH * NN_ROWS], out[CH * NN_ROWS];
    float scales[CH], gamma_f[CH], beta_f[CH];
    int32_t beta[CH];
    for (int c = 0; c < CH; c++) {
        gamma[c] = byte_at(c, 4);
        scales[c] = 0.002f + 0.0005f * (float)c;
        beta[c] = (c * 7919) % 4001 - 2000;
        gamma_f[c] = real_at(c, 5, 1.5f);
        beta_f[c] = real_at(c, 6, 3.0f);
    }
    for (int i = 0; i < CH * NN_ROWS; i++) {
        x[i] = byte_at(i, 7);
    }
    print_q("no_norm.input", qi);
    print_q("no_norm.output", qo);
    print_i8("no_norm.gamma", gamma, CH);
    print_f32("no_norm.scales", scales, CH);
    print_i32("no_norm.beta", beta, CH);
    print_f32("no_norm.gamma_f", gamma_f, CH);
    print_f32("no_norm.beta_f", beta_f, CH);
    print_i8("no_norm.x", x, CH * NN_ROWS);

    QneonNoNorm *op = NULL, *op_f = NULL;
    int bad = failed("no_norm create", qneon_no_norm_create(gamma, scales, beta, CH, qi, qo,
                                                            QNEON_ACTIVATION_NONE, &op)) ||
              failed("no_norm create_f32",
                     qneon_no_norm_create_f32(gamma_f, beta_f, CH, qi, qo, QNEON_ACTIVATION_RELU,
                                              &op_f));
    if (!bad) {
        bad = failed("no_norm", qneon_no_norm_run(op, x, out, CH * NN_ROWS, QNEON_BACKEND_BEST));
        print_i8("no_norm", out, CH * NN_ROWS);
        bad = bad ||
              failed("no_norm f32", qneon_no_norm_run(op_f, x, out, CH * NN_ROWS, QNEON_BACKEND_BEST));
        print_i8("no_norm.f32", out, CH * NN_ROWS);
    }
    qneon_no_norm_destroy(op);
    qneon_no_norm_destroy(op_f);
    return bad;
}

#define GM 5
#define GN 11
#define GK 37

static int gemm(void) {
    const QneonQuantParams qi = {0.02f, -4}, qo = {0.3f, 3};
    int8_t w[GN * GK], w2t[GK * GN], x[GM * GK], out[GM * GN];
    int32_t bias[GN];
    float scales[GN];
    for (int i = 0; i < GN * GK; i++) {
        w[i] = byte_at(i, 8);
        w2t[i] = byte_at(i, 9);
    }
    for (int i = 0; i < GM * GK; i++) {
        x[i] = byte_at(i, 10);
    }
    for (int c = 0; c < GN; c++) {
        bias[c] = (c * 104729) % 20001 - 10000;
        scales[c] = 0.003f + 0.0001f * (float)c;
    }
    print_q("gemm.input", qi);
    print_q("gemm.output", qo);
    print_i8("gemm.w", w, GN * GK);
    print_i8("gemm.w2t", w2t, GK * GN);
    print_i8("gemm.x", x, GM * GK);
    print_i32("gemm.bias", bias, GN);
    print_f32("gemm.scales", scales, GN);
    printf("gemm.shape: %d %d %d\n", GM, GN, GK);

    QneonGemm *op = NULL, *real = NULL;
    int bad = failed("gemm create", qneon_gemm_create(w, GN, GK, bias, qi, scales, qo,
                                                      QNEON_ACTIVATION_NONE,
                                                      QNEON_REQUANTIZATION_SINGLE, &op)) ||
              failed("gemm create real", qneon_gemm_create(w, GN, GK, NULL, qi, scales, qo,
                                                           QNEON_ACTIVATION_RELU,
                                                           QNEON_REQUANTIZATION_REAL_F64, &real));
    if (!bad) {
        bad = failed("gemm", qneon_gemm_run(op, x, out, GM, QNEON_BACKEND_BEST));
        print_i8("gemm", out, GM * GN);
        bad = bad || failed("gemm real", qneon_gemm_run(real, x, out, GM, QNEON_BACKEND_BEST));
        print_i8("gemm.real", out, GM * GN);
        bad = bad || failed("gemm set", qneon_gemm_set_weights(op, w2t, GK * GN, true));
        bad = bad || failed("gemm t", qneon_gemm_run(op, x, out, GM, QNEON_BACKEND_BEST));
        print_i8("gemm.t", out, GM * GN);
    }
    qneon_gemm_destroy(op);
    qneon_gemm_destroy(real);
    return bad;
}

#define MM 6
#define MN 9
#define MK 21

static const QneonQuantParams ql = {0.03f, 5}, qr = {0.04f, -6}, qo = {3.0f, 1};

static int matmul_one(const char *name, bool adj_x, bool adj_y, QneonRounding rounding,
                      const int8_t *lhs, const int8_t *rhs) {
    QneonMatMul *op = NULL;
    if (failed("matmul create",
               qneon_matmul_create(MM, MN, MK, adj_x, adj_y, ql, qr, qo, rounding, &op))) {
        return 1;
    }
    size_t bytes = 0, words = 0;
    int bad = failed("matmul scratch", qneon_matmul_scratch(op, &bytes, &words));
    int8_t *sb = malloc(bytes ? bytes : 1);
    int32_t *sw = malloc((words ? words : 1) * sizeof(int32_t));
    int8_t out[MM * MN];
    if (!bad && sb && sw) {
        bad = failed(name, qneon_matmul_run(op, lhs, MM * MK, rhs, MK * MN, out, MM * MN, sb,
                                            bytes, sw, words, QNEON_BACKEND_BEST));
        print_i8(name, out, MM * MN);
    } else {
        bad = 1;
    }
    free(sb);
    free(sw);
    qneon_matmul_destroy(op);
    return bad;
}

static int matmul(void) {
    int8_t lhs[MM * MK], rhs[MK * MN];
    for (int i = 0; i < MM * MK; i++) {
        lhs[i] = byte_at(i, 11);
    }
    for (int i = 0; i < MK * MN; i++) {
        rhs[i] = byte_at(i, 12);
    }
    print_q("matmul.lhs_q", ql);
    print_q("matmul.rhs_q", qr);
    print_q("matmul.output_q", qo);
    printf("matmul.shape: %d %d %d\n", MM, MN, MK);
    print_i8("matmul.lhs", lhs, MM * MK);
    print_i8("matmul.rhs", rhs, MK * MN);
    return matmul_one("matmul", false, true, QNEON_ROUNDING_DOUBLE, lhs, rhs) ||
           matmul_one("matmul.adj_x", true, false, QNEON_ROUNDING_SINGLE, lhs, rhs);
}

#define FROW 19
#define FLEN (FROW * 3)

static int f32_kernels(void) {
    float x[FLEN], y[FLEN], dy[FLEN], out[FLEN];
    for (int i = 0; i < FLEN; i++) {
        x[i] = real_at(i, 13, 9.0f);
        dy[i] = real_at(i, 14, 1.0f);
    }
    print_f32("f32.x", x, FLEN);
    print_f32("f32.dy", dy, FLEN);
    int bad = failed("f32 softmax", qneon_f32_softmax(x, out, FLEN, FROW,
                                                      QNEON_SOFTMAX_VARIANT_TWO_PASS,
                                                      QNEON_BACKEND_BEST));
    print_f32("f32.softmax", out, FLEN);
    bad = bad || failed("f32 softmax online",
                        qneon_f32_softmax(x, out, FLEN, FROW, QNEON_SOFTMAX_VARIANT_ONLINE,
                                          QNEON_BACKEND_BEST));
    print_f32("f32.softmax_online", out, FLEN);
    bad = bad || failed("f32 log_softmax",
                        qneon_f32_log_softmax(x, out, FLEN, FROW, QNEON_BACKEND_BEST));
    print_f32("f32.log_softmax", out, FLEN);
    bad = bad || failed("f32 logistic", qneon_f32_logistic(x, y, FLEN, QNEON_BACKEND_BEST));
    print_f32("f32.logistic", y, FLEN);
    bad = bad || failed("f32 logistic backward",
                        qneon_f32_logistic_backward(y, dy, out, FLEN, QNEON_BACKEND_BEST));
    print_f32("f32.logistic_backward", out, FLEN);
    bad = bad || failed("f32 tanh", qneon_f32_tanh(x, out, FLEN, QNEON_BACKEND_BEST));
    print_f32("f32.tanh", out, FLEN);
    bad = bad || failed("f32 exp", qneon_f32_exp(x, out, FLEN, QNEON_BACKEND_BEST));
    print_f32("f32.exp", out, FLEN);
    return bad;
}

#define CN 4
#define CC 7

static int cross_entropy(void) {
    float logits[CN * CC], weights[CC], loss[CN], grad[CN * CC], log_probs[CN * CC];
    const float one = 1.0f;
    const int64_t targets[CN] = {3, -100, 0, 6}, classes[CN] = {3, 5, 0, 6};
    QneonLogSumExp saved[CN];
    for (int i = 0; i < CN * CC; i++) {
        logits[i] = real_at(i, 15, 4.0f);
    }
    for (int c = 0; c < CC; c++) {
        weights[c] = 0.5f + 0.25f * (float)c;
    }
    print_f32("ce.logits", logits, CN * CC);
    print_f32("ce.weights", weights, CC);
    print_i64("ce.targets", targets, CN);
    print_i64("ce.classes", classes, CN);

    QneonCrossEntropyOptions o = qneon_cross_entropy_default_options(CC);
    o.weights = weights;
    o.label_smoothing = 0.125f;
    QneonCrossEntropy *mean = NULL, *none = NULL;
    int bad = failed("ce create", qneon_cross_entropy_create(o, &mean));
    QneonCrossEntropyOptions p = qneon_cross_entropy_default_options(CC);
    p.reduction = QNEON_REDUCTION_NONE;
    bad = bad || failed("ce create none", qneon_cross_entropy_create(p, &none));
    if (!bad) {
        bad = failed("ce forward", qneon_cross_entropy_forward(mean, logits, CN * CC, targets, CN,
                                                               1, loss, 1, saved, CN,
                                                               QNEON_BACKEND_BEST));
        print_f32("ce.loss", loss, 1);
        printf("ce.saved:");
        for (int i = 0; i < CN; i++) {
            if (targets[i] == -100) {
                continue; /* unspecified at ignored positions */
            }
            uint64_t l;
            uint32_t m;
            memcpy(&l, &saved[i].ln_sum, sizeof l);
            memcpy(&m, &saved[i].max, sizeof m);
            printf(" %016llx %08lx", (unsigned long long)l, (unsigned long)m);
        }
        printf("\n");
        bad = bad || failed("ce backward",
                            qneon_cross_entropy_backward(mean, logits, CN * CC, targets, CN, 1,
                                                         saved, CN, &one, 1, grad, CN * CC,
                                                         QNEON_BACKEND_BEST));
        print_f32("ce.grad", grad, CN * CC);
        bad = bad || failed("ce forward none",
                            qneon_cross_entropy_forward(none, logits, CN * CC, targets, CN, 1,
                                                        loss, CN, NULL, 0, QNEON_BACKEND_BEST));
        print_f32("ce.none", loss, CN);
        bad = bad || failed("log_softmax", qneon_f32_log_softmax(logits, log_probs, CN * CC, CC,
                                                                 QNEON_BACKEND_BEST));
        bad = bad || failed("ce nll", qneon_cross_entropy_nll(mean, log_probs, CN * CC, targets,
                                                              CN, 1, loss, 1, QNEON_BACKEND_BEST));
        print_f32("ce.nll", loss, 1);
        bad = bad || failed("target_log_probs",
                            qneon_target_log_probs(logits, CN * CC, CC, classes, CN, 1, loss, CN,
                                                   QNEON_BACKEND_BEST));
        print_f32("ce.target_log_probs", loss, CN);
        /* The same loss on int8 logits: quantized by the example. */
        const QneonQuantParams lq = {0.0625f, -2};
        int8_t qlogits[CN * CC];
        for (int i = 0; i < CN * CC; i++) {
            qlogits[i] = byte_at(i, 16);
        }
        print_q("ce.q_input", lq);
        print_i8("ce.q_logits", qlogits, CN * CC);
        QneonQuantizedCrossEntropyI8 *q = NULL;
        bad = bad || failed("ce quantized create",
                            qneon_quantized_cross_entropy_i8_create(o, lq, QNEON_BACKEND_BEST, &q));
        bad = bad || failed("ce quantized",
                            qneon_quantized_cross_entropy_i8_forward(q, qlogits, CN * CC, targets, CN,
                                                                     1, loss, 1));
        print_f32("ce.quantized", loss, 1);
        qneon_quantized_cross_entropy_i8_destroy(q);
        /* A target that is no class: an invalid-argument status. */
        const int64_t wrong[CN] = {3, 7, 0, 6};
        if (qneon_cross_entropy_forward(none, logits, CN * CC, wrong, CN, 1, loss, CN, NULL, 0,
                                        QNEON_BACKEND_BEST) != QNEON_STATUS_INVALID_ARGUMENT) {
            fprintf(stderr, "expected an invalid-argument status for target 7 of 7 classes\n");
            bad = 1;
        }
    }
    qneon_cross_entropy_destroy(mean);
    qneon_cross_entropy_destroy(none);
    return bad;
}

#define HSEQ 3
#define HHEADS 2
#define HDIM 4
#define HLEN (HSEQ * HHEADS * HDIM)

/* The attention-head transposes, there and back; a shape that overflows
   size_t is a length error. */
static int heads(void) {
    int8_t x[HLEN], split[HLEN], merged[HLEN];
    for (int i = 0; i < HLEN; i++) {
        x[i] = byte_at(i, 9);
    }
    printf("heads.shape: %d %d %d\n", HSEQ, HHEADS, HDIM);
    print_i8("heads.x", x, HLEN);
    int bad = failed("split_heads", qneon_split_heads_i8(x, split, HSEQ, HHEADS, HDIM));
    bad = bad || failed("merge_heads", qneon_merge_heads_i8(split, merged, HSEQ, HHEADS, HDIM));
    if (!bad) {
        print_i8("heads.split", split, HLEN);
        print_i8("heads.merge", merged, HLEN);
    }
    if (qneon_split_heads_i8(x, split, SIZE_MAX, 2, 2) != QNEON_STATUS_LENGTH) {
        fprintf(stderr, "expected a length status for seq * heads * head_dim past size_t\n");
        bad = 1;
    }
    return bad;
}

int main(void) {
    int bad = binary();
    bad = no_norm() || bad;
    bad = gemm() || bad;
    bad = matmul() || bad;
    bad = f32_kernels() || bad;
    bad = cross_entropy() || bad;
    bad = heads() || bad;
    return bad;
}

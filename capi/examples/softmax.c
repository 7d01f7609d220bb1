/* Softmax on int8 rows through qneon's C API, with every method.
 *
 * Build (host):    cargo build -p qneon-capi
 *                  cc capi/examples/softmax.c -Icapi/include \
 *                     target/debug/libqneon_capi.a -lpthread -ldl -lm -o softmax
 * Build (aarch64): cargo build -p qneon-capi --lib --target aarch64-unknown-linux-gnu
 *                  aarch64-linux-gnu-gcc -static capi/examples/softmax.c -Icapi/include \
 *                     target/aarch64-unknown-linux-gnu/debug/libqneon_capi.a \
 *                     -lpthread -ldl -lm -o softmax
 *
 * Prints the parameters (input scale, zero point, beta, row length), the input and each method's output bytes (two hex
 * digits each) on stdout; `cargo xtask capi` compares them with what the
 * Rust library computes for the same input. Errors go to stderr. */
#include <stdint.h>
#include <stdio.h>

#include "qneon.h"

#define ROW 37
#define ROWS 3
#define LEN (ROW * ROWS)

static void print_bytes(const char *name, const int8_t *v, size_t n) {
    printf("%s:", name);
    for (size_t i = 0; i < n; i++) {
        printf(" %02x", (unsigned)(uint8_t)v[i]);
    }
    printf("\n");
}

/* Prints a failed call's status and reason; returns 1 on failure. */
static int failed(const char *what, QneonStatus status) {
    if (status == QNEON_STATUS_OK) {
        return 0;
    }
    fprintf(stderr, "%s: status %d: %s\n", what, (int)status, qneon_last_error_message());
    return 1;
}

int main(void) {
    const QneonQuantParams input_q = {0.125f, 3};
    const float beta = 1.0f;
    /* What softmax requires on int8: scale 1/256, zero point -128. */
    const QneonQuantParams output_q = qneon_softmax_i8_output_quantization();

    int8_t input[LEN];
    for (int i = 0; i < LEN; i++) {
        /* Rows with a spread of values, repeats and both extremes. */
        input[i] = (int8_t)((i * 73 + (i / ROW) * 29) % 256 - 128);
    }
    printf("params: %.9g %d %.9g %d\n", (double)input_q.scale, (int)input_q.zero_point, (double)beta,
           ROW);
    print_bytes("input", input, LEN);

    const struct {
        const char *name;
        QneonMethod method;
    } methods[] = {
        {"fixed", QNEON_METHOD_FIXED_POINT},
        {"lut", QNEON_METHOD_LUT},
        {"f32", QNEON_METHOD_DEQUANT_F32},
    };
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        QneonSoftmaxI8 *op = NULL;
        if (failed("create", qneon_softmax_i8_create(input_q, beta, output_q, methods[m].method, &op))) {
            return 1;
        }
        int8_t output[LEN];
        if (failed("run", qneon_softmax_i8_run(op, input, output, LEN, ROW, QNEON_BACKEND_BEST))) {
            qneon_softmax_i8_destroy(op);
            return 1;
        }
        print_bytes(methods[m].name, output, LEN);
        qneon_softmax_i8_destroy(op);
    }

    /* Errors come back as a status and a message, never a crash. */
    QneonSoftmaxI8 *op = NULL;
    const QneonQuantParams wrong = {1.0f / 128.0f, 0};
    QneonStatus s = qneon_softmax_i8_create(input_q, beta, wrong, QNEON_METHOD_FIXED_POINT, &op);
    if (s != QNEON_STATUS_INVALID_ARGUMENT || op != NULL) {
        fprintf(stderr, "expected an invalid-argument status for a wrong output quantization\n");
        return 1;
    }
    fprintf(stderr, "expected error: %s\n", qneon_last_error_message());
    s = qneon_softmax_i8_run(NULL, input, input, LEN, ROW, QNEON_BACKEND_BEST);
    if (s != QNEON_STATUS_NULL_POINTER) {
        fprintf(stderr, "expected a null-pointer status for a null handle\n");
        return 1;
    }
    fprintf(stderr, "expected error: %s\n", qneon_last_error_message());
    return 0;
}

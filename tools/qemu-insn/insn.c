/*
 * qemu-insn: a QEMU TCG plugin that counts executed guest instructions,
 * in total and per marked region.
 *
 * Usage:
 *   qemu-aarch64 -cpu max -plugin libinsn.so,out=count.txt ./prog
 *
 * With `out=PATH` the total is written to PATH as a decimal number on the
 * first line; without it a line "qemu-insn: N instructions" goes to stderr.
 * If the program executed at least one region marker (below), one line
 *   region ID COUNT
 * follows per region with a nonzero count, in increasing ID order (on
 * stderr: "qemu-insn: region ID COUNT"). The region counts add up to the
 * total exactly.
 *
 * Regions. The marker is the aarch64 instruction `movz xzr, #imm16` with
 * imm16 = 0xA000 | ID, ID in 0..=4095, encoded 0xD280001F | (imm16 << 5).
 * It writes the zero register, so it does nothing on hardware, and
 * compilers never emit it (a move to xzr is dead code). Executing it makes
 * ID the current region: every instruction from the marker itself up to
 * (not including) the next marker counts in region ID. Region 0 is the
 * current one at start-up; by convention it means "outside every marked
 * piece of code". A marker of another ID in the 0xA000 range is simply a
 * switch to that ID: regions do not nest. (The first markers had 8-bit IDs,
 * imm16 0xA000..0xA0FF; they mean the same under the 12-bit rule, so
 * binaries with either kind count alike. 4096 IDs give one region per
 * operator of a model of up to 4095 operators.)
 *
 * How it counts: whenever QEMU translates a block, we attach an inline
 * "add the block's instruction count to a u64" operation to it. Inline ops
 * run as generated code, with no call back into the plugin, so the overhead
 * is small and the count is exact and repeatable for a given binary and
 * input. (A block left early by a fault would be over-counted; ordinary
 * programs never do that.) At translation time we also read each
 * instruction's bytes; on a marker only we register an exec callback whose
 * userdata packs (ID, index k of the marker in its block, block length n).
 * The block's inline add runs at block entry, before the marker's
 * callback, so when the callback runs the counter already includes the
 * n - k instructions from the marker to the block's end. The instructions
 * executed before the marker are therefore counter - (n - k); everything
 * since the previous switch goes to the old region and the new one starts
 * there. At exit the last region gets the rest. Only markers cost a call,
 * so unmarked code runs as fast as with the total alone.
 *
 * Regions assume a single guest thread executes while markers are in use
 * (the counter and the current region are process-wide, as the total of
 * the API 1 path always was); with several threads the total stays exact
 * but the split between regions is not meaningful.
 *
 * Build with just a C compiler, no QEMU headers needed:
 *   cc -shared -fPIC -O2 -fvisibility=hidden -o libinsn.so insn.c
 *
 * API versions: QEMU up to 8.x offers qemu_plugin_register_vcpu_tb_exec_inline
 * (plugin API 1) and qemu_plugin_insn_data returning a pointer to the
 * instruction's bytes. QEMU 9.0 removed the former in favour of the
 * scoreboard based qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu, turned
 * qemu_plugin_insn_data into a copy into a caller's buffer, and raised the
 * minimum API to 2. The version-specific functions are declared weak below;
 * a constructor looks at which ones the loading QEMU exports and advertises
 * the matching API version, so one build works with either. (The API 1
 * path, regions included, is tested on QEMU 7.2 by `cargo test -p xtask`;
 * the API 2 path has only run against a stand-in host.)
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define WEAK __attribute__((weak))

/* ---- The few pieces of the QEMU plugin ABI this plugin uses. ---- */

typedef uint64_t plugin_id;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_plugin_scoreboard;

/* Only the leading fields are read; QEMU owns the full layout. */
struct plugin_info {
    const char *target_name;
    struct {
        int min;
        int cur;
    } version;
};

/* A u64 slot in a scoreboard (API >= 2). Passed by value. */
struct plugin_u64 {
    struct qemu_plugin_scoreboard *score;
    size_t offset;
};

enum { INLINE_ADD_U64 = 0 };
/* enum qemu_plugin_cb_flags: the callback reads no registers. */
enum { CB_NO_REGS = 0 };

typedef void (*tb_trans_cb)(plugin_id id, struct qemu_plugin_tb *tb);
typedef void (*udata_cb)(plugin_id id, void *userdata);
typedef void (*vcpu_udata_cb)(unsigned int vcpu_index, void *userdata);

/* Present in every plugin API version we support. */
void qemu_plugin_register_vcpu_tb_trans_cb(plugin_id id, tb_trans_cb cb);
void qemu_plugin_register_atexit_cb(plugin_id id, udata_cb cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
                                                 size_t idx);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
                                            vcpu_udata_cb cb, int flags,
                                            void *userdata);
/*
 * Same name, two signatures: API 1 `const void *f(insn)`, API 2
 * `size_t f(insn, void *dest, size_t len)`. Declared with a placeholder
 * type, its address is kept in a generic function pointer and converted to
 * the pointer type of the API in use before the call.
 */
void qemu_plugin_insn_data(void);
typedef void (*any_fn)(void);
static any_fn insn_data_fn;
typedef const void *(*insn_data_v1)(const struct qemu_plugin_insn *insn);
typedef size_t (*insn_data_v2)(const struct qemu_plugin_insn *insn,
                               void *dest, size_t len);

/* API 1 (QEMU <= 8.x). */
WEAK void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
                                                   int op, void *ptr,
                                                   uint64_t imm);

/* API >= 2 (QEMU >= 9.0). */
WEAK struct qemu_plugin_scoreboard *qemu_plugin_scoreboard_new(size_t size);
WEAK void qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(
    struct qemu_plugin_tb *tb, int op, struct plugin_u64 entry, uint64_t imm);
WEAK uint64_t qemu_plugin_u64_sum(struct plugin_u64 entry);

/* QEMU reads this right after loading us, after constructors have run. */
EXPORT int qemu_plugin_version = 1;

__attribute__((constructor)) static void pick_api_version(void)
{
    if (qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu != NULL) {
        qemu_plugin_version = 2;
    }
}

/* ---- The counters. ---- */

static uint64_t total;              /* API 1: shared by all vCPUs, not atomic */
static struct plugin_u64 per_vcpu;  /* API 2: one counter per vCPU */
static const char *out_path;

/* Region state, written only by marker callbacks (one guest thread). */
#define N_REGIONS 4096
static uint64_t region_count[N_REGIONS];
static unsigned current_region;   /* 0 until the first marker */
static uint64_t region_start;     /* instructions executed when it began */
static int marker_seen;

/* movz xzr, #imm16 is 0xD280001F | imm16 << 5; markers have imm16 0xAxxx. */
#define MOVZ_XZR_MASK 0xFFE0001Fu
#define MOVZ_XZR 0xD280001Fu
#define MARKER_TAG 0xA000u

/* Userdata of a marker callback: ID, index in block, block length, 12 bits
 * each (QEMU blocks hold at most 512 instructions), 36 bits in all: the
 * userdata pointer is 64 bits wide on every host QEMU's plugins run on. */
#define ID_BITS 12
_Static_assert(sizeof(uintptr_t) * 8 >= 3 * 12, "userdata needs 36 bits");
#define FIELD_BITS 12
#define FIELD_MAX ((1u << FIELD_BITS) - 1)

static uint64_t executed(void)
{
    return per_vcpu.score != NULL ? qemu_plugin_u64_sum(per_vcpu) : total;
}

/* The instruction's 4 bytes as a little-endian word, or -1 if it is not a
 * 4-byte instruction or its bytes cannot be read. */
static int64_t insn_word(const struct qemu_plugin_insn *insn)
{
    uint8_t b[4];

    if (qemu_plugin_insn_size(insn) != 4) {
        return -1;
    }
    if (qemu_plugin_version >= 2) {
        if (((insn_data_v2)(void *)insn_data_fn)(insn, b, 4) != 4) {
            return -1;
        }
    } else {
        const void *p = ((insn_data_v1)(void *)insn_data_fn)(insn);
        if (p == NULL) {
            return -1;
        }
        memcpy(b, p, 4);
    }
    return (int64_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 |
                     (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
}

/* The region ID of a marker word, or -1. */
static int marker_id(int64_t word)
{
    uint32_t imm;

    if (word < 0 || ((uint32_t)word & MOVZ_XZR_MASK) != MOVZ_XZR) {
        return -1;
    }
    imm = ((uint32_t)word >> 5) & 0xFFFF;
    return (imm & 0xF000) == MARKER_TAG ? (int)(imm & 0xFFF) : -1;
}

static void on_marker(unsigned int vcpu_index, void *userdata)
{
    uintptr_t u = (uintptr_t)userdata;
    unsigned id = (unsigned)(u & FIELD_MAX);
    uint64_t k = (u >> ID_BITS) & FIELD_MAX;
    uint64_t n = (u >> (ID_BITS + FIELD_BITS)) & FIELD_MAX;
    /* The block's inline add already counted the marker and the n - k - 1
     * instructions after it; none of them has run yet. */
    uint64_t now = executed() - (n - k);

    (void)vcpu_index;
    region_count[current_region] += now - region_start;
    region_start = now;
    current_region = id;
    marker_seen = 1;
}

static void on_translate(plugin_id id, struct qemu_plugin_tb *tb)
{
    uint64_t n = qemu_plugin_tb_n_insns(tb);
    size_t k;

    (void)id;
    if (per_vcpu.score != NULL) {
        qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, INLINE_ADD_U64,
                                                          per_vcpu, n);
    } else {
        qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, &total,
                                                 n);
    }

    for (k = 0; k < n; k++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, k);
        int region = insn != NULL ? marker_id(insn_word(insn)) : -1;
        uintptr_t u;

        if (region < 0) {
            continue;
        }
        if (n > FIELD_MAX) {
            fprintf(stderr, "qemu-insn: a block of %llu instructions is too "
                            "long to place a marker in; regions are off\n",
                    (unsigned long long)n);
            continue;
        }
        u = (uintptr_t)region | (uintptr_t)k << ID_BITS |
            (uintptr_t)n << (ID_BITS + FIELD_BITS);
        qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker, CB_NO_REGS,
                                               (void *)u);
    }
}

static void write_counts(FILE *f, const char *prefix, uint64_t n)
{
    unsigned r;

    if (prefix[0] != '\0') {
        fprintf(f, "%s%llu instructions\n", prefix, (unsigned long long)n);
    } else {
        fprintf(f, "%llu\n", (unsigned long long)n);
    }
    if (!marker_seen) {
        return;
    }
    for (r = 0; r < N_REGIONS; r++) {
        if (region_count[r] != 0) {
            fprintf(f, "%sregion %u %llu\n", prefix, r,
                    (unsigned long long)region_count[r]);
        }
    }
}

static void report_total(plugin_id id, void *userdata)
{
    uint64_t n = executed();
    FILE *f;

    (void)id;
    (void)userdata;
    /* The region open at exit runs to the end. */
    region_count[current_region] += n - region_start;
    region_start = n;

    if (out_path == NULL) {
        write_counts(stderr, "qemu-insn: ", n);
        return;
    }
    f = fopen(out_path, "w");
    if (f == NULL) {
        perror("qemu-insn: cannot open out file");
        write_counts(stderr, "qemu-insn: ", n);
        return;
    }
    write_counts(f, "", n);
    fclose(f);
}

EXPORT int qemu_plugin_install(plugin_id id, const struct plugin_info *info,
                               int argc, char **argv)
{
    int i;

    for (i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0 && argv[i][4] != '\0') {
            out_path = argv[i] + 4;
        } else {
            fprintf(stderr, "qemu-insn: unknown argument '%s' "
                            "(the only one is out=PATH)\n", argv[i]);
            return -1;
        }
    }

    if (qemu_plugin_version >= 2) {
        if (qemu_plugin_scoreboard_new == NULL || qemu_plugin_u64_sum == NULL) {
            fprintf(stderr, "qemu-insn: this QEMU has the per-vCPU inline API "
                            "but no scoreboards\n");
            return -1;
        }
        per_vcpu.score = qemu_plugin_scoreboard_new(sizeof(uint64_t));
        per_vcpu.offset = 0;
    } else if (qemu_plugin_register_vcpu_tb_exec_inline == NULL) {
        fprintf(stderr, "qemu-insn: QEMU %s offers no inline TB counter API "
                        "(plugin API %d..%d)\n",
                info->target_name, info->version.min, info->version.cur);
        return -1;
    }

    insn_data_fn = qemu_plugin_insn_data;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, report_total, NULL);
    return 0;
}

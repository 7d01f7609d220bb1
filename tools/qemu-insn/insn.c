/*
 * qemu-insn: a QEMU TCG plugin that counts executed guest instructions.
 *
 * Usage:
 *   qemu-aarch64 -cpu max -plugin libinsn.so,out=count.txt ./prog
 *
 * With `out=PATH` the total is written to PATH as a single decimal number
 * followed by a newline; without it a line "qemu-insn: N instructions" goes
 * to stderr.
 *
 * How it counts: whenever QEMU translates a block, we attach an inline
 * "add the block's instruction count to a u64" operation to it. Inline ops
 * run as generated code, with no call back into the plugin, so the overhead
 * is small and the count is exact and repeatable for a given binary and
 * input. (A block left early by a fault would be over-counted; ordinary
 * programs never do that.)
 *
 * Build with just a C compiler, no QEMU headers needed:
 *   cc -shared -fPIC -O2 -fvisibility=hidden -o libinsn.so insn.c
 *
 * API versions: QEMU up to 8.x offers qemu_plugin_register_vcpu_tb_exec_inline
 * (plugin API 1). QEMU 9.0 removed it in favour of the scoreboard based
 * qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu and raised the minimum
 * API to 2. Both are declared weak below; a constructor looks at which one
 * the loading QEMU exports and advertises the matching API version, so one
 * build works with either. (The API 1 path has been run on QEMU 7.2; the
 * API 2 path only against a stand-in host.)
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

typedef void (*tb_trans_cb)(plugin_id id, struct qemu_plugin_tb *tb);
typedef void (*udata_cb)(plugin_id id, void *userdata);

/* Present in every plugin API version we support. */
void qemu_plugin_register_vcpu_tb_trans_cb(plugin_id id, tb_trans_cb cb);
void qemu_plugin_register_atexit_cb(plugin_id id, udata_cb cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);

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

/* ---- The counter. ---- */

static uint64_t total;              /* API 1: shared by all vCPUs, not atomic */
static struct plugin_u64 per_vcpu;  /* API 2: one counter per vCPU */
static const char *out_path;

static void on_translate(plugin_id id, struct qemu_plugin_tb *tb)
{
    uint64_t n = qemu_plugin_tb_n_insns(tb);

    (void)id;
    if (per_vcpu.score != NULL) {
        qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, INLINE_ADD_U64,
                                                          per_vcpu, n);
    } else {
        qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, &total,
                                                 n);
    }
}

static void report_total(plugin_id id, void *userdata)
{
    uint64_t n = per_vcpu.score != NULL ? qemu_plugin_u64_sum(per_vcpu) : total;
    FILE *f;

    (void)id;
    (void)userdata;
    if (out_path == NULL) {
        fprintf(stderr, "qemu-insn: %llu instructions\n",
                (unsigned long long)n);
        return;
    }
    f = fopen(out_path, "w");
    if (f == NULL) {
        perror("qemu-insn: cannot open out file");
        fprintf(stderr, "qemu-insn: %llu instructions\n",
                (unsigned long long)n);
        return;
    }
    fprintf(f, "%llu\n", (unsigned long long)n);
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

    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, report_total, NULL);
    return 0;
}

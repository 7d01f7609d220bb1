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
 * Threads. qemu user mode runs each guest thread on a vCPU of its own, and
 * the plugin counts per vCPU: every vCPU has its own counter, its own
 * current region and its own region counts, so a marker switches the region
 * of the thread that executed it only. The `out=` file keeps its format:
 * the total of all threads, and per region the sum over threads (they
 * still add up to the total exactly); a single-thread program writes the
 * same bytes as before. With `vcpus=PATH2` the plugin also writes, per
 * vCPU that executed anything, in increasing vCPU order:
 *   vcpu V COUNT
 *   vcpu V region ID COUNT      (one per region with a nonzero count)
 * The vCPU counts add up to the total, and each vCPU's region lines to its
 * count. vCPU numbers are qemu's CPU indexes: 0 is the main thread, and a
 * new thread takes one more than the highest index in use, so a thread
 * created after the highest one exited takes over its slot: its
 * instructions add to that slot's. When a thread exits its slot's region
 * goes back to 0 (where QEMU reports vCPU exits to plugins; where it does
 * not, the next thread in the slot starts in the region the old one
 * left). Without `out=`, the same lines go to stderr prefixed with
 * "qemu-insn: " when more than one vCPU ran.
 *
 * Hot blocks. With `blocks=PATH` every translated block also counts its
 * executions per vCPU and region (a callback per block execution: slower,
 * for profiling only), and at exit PATH gets one line per (block, vCPU,
 * region) that ran:
 *   block VADDR N VCPU REGION EXECUTIONS
 * VADDR in hex, N the block's instruction count; a block translated twice
 * (other flags) gives two lines of the same VADDR. A block counts in the
 * region current when it starts (a marker inside it moves the rest of it
 * in the exact counts, not here). vCPUs past the first BLOCK_VCPUS, and
 * executions beyond a vCPU table's room, are not recorded: a last
 * line `unrecorded COUNT` says how many. The other outputs do not change.
 *
 * Counting per vCPU with API 1, which has one inline counter for all
 * vCPUs: until the program creates its first thread the inline counter is
 * exact and belongs to vCPU 0. A clone syscall sharing the address space
 * (clone with CLONE_VM, or clone3) makes every block translated from then
 * on count with a per-block callback into the executing vCPU's counter
 * instead (a call per block: slower than the inline add, exact). Blocks
 * translated before are never executed again: when user mode creates the
 * first thread it switches every vCPU to code translated for parallel
 * execution, and blocks are looked up by those flags. Single-thread
 * programs keep the inline add alone. With API 2 scoreboards give one
 * inline counter per vCPU, threads or not.
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
 * the API 2 path has only run against a stand-in host. The per-vCPU
 * counts of threaded programs are tested the same way on QEMU 7.2.)
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
typedef void (*vcpu_simple_cb)(plugin_id id, unsigned int vcpu_index);
typedef void (*vcpu_syscall_cb)(plugin_id id, unsigned int vcpu_index,
                                int64_t num, uint64_t a1, uint64_t a2,
                                uint64_t a3, uint64_t a4, uint64_t a5,
                                uint64_t a6, uint64_t a7, uint64_t a8);

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
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
                                          vcpu_udata_cb cb, int flags,
                                          void *userdata);
void qemu_plugin_register_vcpu_init_cb(plugin_id id, vcpu_simple_cb cb);
void qemu_plugin_register_vcpu_exit_cb(plugin_id id, vcpu_simple_cb cb);
void qemu_plugin_register_vcpu_syscall_cb(plugin_id id, vcpu_syscall_cb cb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
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
WEAK uint64_t qemu_plugin_u64_get(struct plugin_u64 entry,
                                 unsigned int vcpu_index);
WEAK int qemu_plugin_num_vcpus(void);

/* QEMU reads this right after loading us, after constructors have run. */
EXPORT int qemu_plugin_version = 1;

__attribute__((constructor)) static void pick_api_version(void)
{
    if (qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu != NULL) {
        qemu_plugin_version = 2;
    }
}

/* ---- The counters. ---- */

/* API 1: the inline counter, exact while one thread runs (vCPU 0's). */
static uint64_t total;
static struct plugin_u64 per_vcpu;  /* API 2: one counter per vCPU */
static const char *out_path;
static const char *vcpus_path;
static const char *blocks_path;

/* API 1: set before the first thread exists; blocks translated from then
 * on count by callback per vCPU. Read and written under QEMU's translation
 * and syscall paths of whichever thread, hence atomic. */
static int threaded;

#define N_REGIONS 4096
/* vCPUs with counts of their own; a program with more threads alive at
 * once gets a warning and no per-vCPU or region split (the total stays
 * exact). 256 x 32 KiB of region counts: only the pages of vCPUs that
 * ran are ever touched. */
#define MAX_VCPUS 256

/* One vCPU's state, written only by that vCPU's thread (at exit, by the
 * one thread left), on a cache line of its own. */
struct vcpu {
    uint64_t executed;      /* API 1: callback-counted instructions */
    uint64_t region_start;  /* its count when its current region began */
    unsigned current_region;
} __attribute__((aligned(64)));

static struct vcpu vcpus[MAX_VCPUS];
static uint64_t region_count[MAX_VCPUS][N_REGIONS];
static uint64_t beyond;  /* API 1: instructions of vCPUs >= MAX_VCPUS */
static int too_many;     /* a vCPU >= MAX_VCPUS ran */
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

/* aarch64 Linux syscall numbers and the clone flag of a thread. */
#define SYS_CLONE 220
#define SYS_CLONE3 435
#define CLONE_VM 0x100u

/* Instructions vCPU v has executed so far (v < MAX_VCPUS). */
static uint64_t executed_on(unsigned v)
{
    if (per_vcpu.score != NULL) {
        return qemu_plugin_u64_get(per_vcpu, v);
    }
    return vcpus[v].executed + (v == 0 ? total : 0);
}

/* Instructions executed by all vCPUs; at exit only (no thread runs). */
static uint64_t executed(void)
{
    uint64_t n;
    unsigned v;

    if (per_vcpu.score != NULL) {
        return qemu_plugin_u64_sum(per_vcpu);
    }
    n = total + __atomic_load_n(&beyond, __ATOMIC_RELAXED);
    for (v = 0; v < MAX_VCPUS; v++) {
        n += vcpus[v].executed;
    }
    return n;
}

/* The highest vCPU index that executed an instruction, or -1. */
static int last_vcpu(void)
{
    int v = MAX_VCPUS - 1;

    /* A scoreboard has slots for the vCPUs QEMU made, no more. */
    if (per_vcpu.score != NULL) {
        int made = qemu_plugin_num_vcpus();

        if (made > MAX_VCPUS) {
            too_many = 1;
        }
        v = (made < MAX_VCPUS ? made : MAX_VCPUS) - 1;
    }
    for (; v >= 0; v--) {
        if (executed_on((unsigned)v) != 0) {
            return v;
        }
    }
    return -1;
}

/* API 1 after the first thread: every block entry adds its length to the
 * executing vCPU's counter. */
static void on_block(unsigned int vcpu_index, void *userdata)
{
    uint64_t n = (uint64_t)(uintptr_t)userdata;

    if (vcpu_index < MAX_VCPUS) {
        vcpus[vcpu_index].executed += n;
    } else {
        __atomic_fetch_add(&beyond, n, __ATOMIC_RELAXED);
        __atomic_store_n(&too_many, 1, __ATOMIC_RELAXED);
    }
}

/* `blocks=`: every translated block gets an id and a record (address,
 * length); each vCPU counts the executions of (block, region) pairs in a
 * hash table of its own, made on its first block. */
#define BLOCK_VCPUS 16
#define TABLE_BITS 19
#define TABLE_SIZE (1u << TABLE_BITS)
struct block {
    uint64_t vaddr;
    uint64_t n;
    uint32_t id;
    struct block *next;
};
struct pair_count {
    uint64_t key;  /* (block id + 1) << 12 | region; 0: empty */
    uint64_t executions;
};
static struct block *blocks;
static uint32_t next_block_id;
static struct pair_count *tables[BLOCK_VCPUS];
static uint64_t table_used[BLOCK_VCPUS];
static uint64_t unrecorded;  /* executions no table had room for */

static void on_block_profile(unsigned int vcpu_index, void *userdata)
{
    const struct block *b = userdata;
    unsigned v = vcpu_index;
    uint64_t key, h;
    struct pair_count *t;

    /* Each table is written by its own vCPU's thread only. */
    if (v >= BLOCK_VCPUS) {
        __atomic_fetch_add(&unrecorded, 1, __ATOMIC_RELAXED);
        return;
    }
    key = ((uint64_t)b->id + 1) << ID_BITS | vcpus[v].current_region;
    t = tables[v];
    if (t == NULL) {
        t = tables[v] = calloc(TABLE_SIZE, sizeof *t);
        if (t == NULL) {
            __atomic_fetch_add(&unrecorded, 1, __ATOMIC_RELAXED);
            return;
        }
    }
    for (h = (key * 0x9E3779B97F4A7C15ull) >> (64 - TABLE_BITS);;
         h = (h + 1) & (TABLE_SIZE - 1)) {
        if (t[h].key == key) {
            t[h].executions++;
            return;
        }
        if (t[h].key == 0) {
            if (table_used[v] * 4 >= (uint64_t)TABLE_SIZE * 3) {
                __atomic_fetch_add(&unrecorded, 1, __ATOMIC_RELAXED);
                return;
            }
            table_used[v]++;
            t[h].key = key;
            t[h].executions = 1;
            return;
        }
    }
}

static void add_block(struct qemu_plugin_tb *tb, uint64_t n)
{
    struct block *b = calloc(1, sizeof *b);

    if (b == NULL) {
        return;  /* the profile misses a block; the counts are unaffected */
    }
    b->vaddr = qemu_plugin_tb_vaddr(tb);
    b->n = n;
    b->id = __atomic_fetch_add(&next_block_id, 1, __ATOMIC_RELAXED);
    b->next = __atomic_load_n(&blocks, __ATOMIC_ACQUIRE);
    while (!__atomic_compare_exchange_n(&blocks, &b->next, b, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    }
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block_profile, CB_NO_REGS, b);
}

static void write_blocks(void)
{
    FILE *f = fopen(blocks_path, "w");
    struct block *b;
    struct block **by_id;
    unsigned v;
    uint32_t h;

    if (f == NULL) {
        perror("qemu-insn: cannot open blocks file");
        return;
    }
    by_id = calloc(next_block_id + 1, sizeof *by_id);
    if (by_id == NULL) {
        fclose(f);
        return;
    }
    for (b = blocks; b != NULL; b = b->next) {
        by_id[b->id] = b;
    }
    for (v = 0; v < BLOCK_VCPUS; v++) {
        if (tables[v] == NULL) {
            continue;
        }
        for (h = 0; h < TABLE_SIZE; h++) {
            const struct pair_count *c = &tables[v][h];
            uint64_t id;

            if (c->key == 0) {
                continue;
            }
            id = (c->key >> ID_BITS) - 1;
            if (id < next_block_id && by_id[id] != NULL) {
                fprintf(f, "block %llx %llu %u %u %llu\n",
                        (unsigned long long)by_id[id]->vaddr,
                        (unsigned long long)by_id[id]->n, v,
                        (unsigned)(c->key & FIELD_MAX),
                        (unsigned long long)c->executions);
            }
        }
    }
    if (unrecorded != 0) {
        fprintf(f, "unrecorded %llu\n", (unsigned long long)unrecorded);
    }
    free(by_id);
    fclose(f);
}

/* Closes vCPU v's current region at its count now and makes `id` current. */
static void switch_region(unsigned v, uint64_t now, unsigned id)
{
    struct vcpu *c = &vcpus[v];

    region_count[v][c->current_region] += now - c->region_start;
    c->region_start = now;
    c->current_region = id;
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

    if (vcpu_index >= MAX_VCPUS) {
        __atomic_store_n(&too_many, 1, __ATOMIC_RELAXED);
        return;  /* no regions for it; the report says so */
    }
    /* The block's add (inline or callback, both at block entry) already
     * counted the marker and the n - k - 1 instructions after it; none of
     * them has run yet. */
    switch_region(vcpu_index, executed_on(vcpu_index) - (n - k), id);
    if (!marker_seen) {
        __atomic_store_n(&marker_seen, 1, __ATOMIC_RELAXED);
    }
}

/* API 1: a clone that shares the address space is about to make a thread;
 * blocks translated from now on must count per vCPU. The flag is set
 * before QEMU translates any code for parallel execution. */
static void on_syscall(plugin_id id, unsigned int vcpu_index, int64_t num,
                       uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
                       uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8)
{
    (void)id; (void)vcpu_index; (void)a2; (void)a3; (void)a4;
    (void)a5; (void)a6; (void)a7; (void)a8;
    /* clone3's flags are in guest memory: any clone3 counts as a thread. */
    if ((num == SYS_CLONE && (a1 & CLONE_VM) != 0) || num == SYS_CLONE3) {
        __atomic_store_n(&threaded, 1, __ATOMIC_SEQ_CST);
    }
}

/* A vCPU that appears after the first is a thread: the same switch, in case
 * a thread came by a path the syscall check does not know. */
static void on_vcpu_init(plugin_id id, unsigned int vcpu_index)
{
    (void)id;
    if (vcpu_index > 0) {
        __atomic_store_n(&threaded, 1, __ATOMIC_SEQ_CST);
    }
}

/* A thread ends: its slot's region goes back to 0 for the next owner. */
static void on_vcpu_exit(plugin_id id, unsigned int vcpu_index)
{
    (void)id;
    if (vcpu_index < MAX_VCPUS) {
        switch_region(vcpu_index, executed_on(vcpu_index), 0);
    }
}

static void on_translate(plugin_id id, struct qemu_plugin_tb *tb)
{
    uint64_t n = qemu_plugin_tb_n_insns(tb);
    size_t k;

    (void)id;
    if (per_vcpu.score != NULL) {
        qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, INLINE_ADD_U64,
                                                          per_vcpu, n);
    } else if (__atomic_load_n(&threaded, __ATOMIC_SEQ_CST)) {
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, CB_NO_REGS,
                                             (void *)(uintptr_t)n);
    } else {
        qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, &total,
                                                 n);
    }
    if (blocks_path != NULL) {
        add_block(tb, n);
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

/* The total, then per region the sum over vCPUs. */
static void write_counts(FILE *f, const char *prefix, uint64_t n, int last)
{
    unsigned r;
    int v;

    if (prefix[0] != '\0') {
        fprintf(f, "%s%llu instructions\n", prefix, (unsigned long long)n);
    } else {
        fprintf(f, "%llu\n", (unsigned long long)n);
    }
    if (!marker_seen || too_many) {
        return;
    }
    for (r = 0; r < N_REGIONS; r++) {
        uint64_t sum = 0;

        for (v = 0; v <= last; v++) {
            sum += region_count[v][r];
        }
        if (sum != 0) {
            fprintf(f, "%sregion %u %llu\n", prefix, r,
                    (unsigned long long)sum);
        }
    }
}

/* Per vCPU that ran: its count, then its regions. */
static void write_vcpus(FILE *f, const char *prefix, int last)
{
    unsigned r;
    int v;

    if (too_many) {
        return;
    }
    for (v = 0; v <= last; v++) {
        uint64_t n = executed_on((unsigned)v);

        if (n == 0) {
            continue;
        }
        fprintf(f, "%svcpu %d %llu\n", prefix, v, (unsigned long long)n);
        if (!marker_seen) {
            continue;
        }
        for (r = 0; r < N_REGIONS; r++) {
            if (region_count[v][r] != 0) {
                fprintf(f, "%svcpu %d region %u %llu\n", prefix, v, r,
                        (unsigned long long)region_count[v][r]);
            }
        }
    }
}

static void report_total(plugin_id id, void *userdata)
{
    uint64_t n = executed();
    int last = last_vcpu();
    int v;
    FILE *f;

    (void)id;
    (void)userdata;
    /* The region open at exit runs to the end, on every vCPU. */
    for (v = 0; v <= last; v++) {
        switch_region((unsigned)v, executed_on((unsigned)v),
                      vcpus[v].current_region);
    }
    if (too_many) {
        fprintf(stderr, "qemu-insn: more than %d vCPUs ran; the total is "
                        "exact, regions and per-vCPU counts are off\n",
                MAX_VCPUS);
    }

    if (blocks_path != NULL) {
        write_blocks();
    }
    if (vcpus_path != NULL) {
        f = fopen(vcpus_path, "w");
        if (f == NULL) {
            perror("qemu-insn: cannot open vcpus file");
        } else {
            write_vcpus(f, "", last);
            fclose(f);
        }
    }
    if (out_path == NULL) {
        write_counts(stderr, "qemu-insn: ", n, last);
        if (vcpus_path == NULL && last > 0) {
            write_vcpus(stderr, "qemu-insn: ", last);
        }
        return;
    }
    f = fopen(out_path, "w");
    if (f == NULL) {
        perror("qemu-insn: cannot open out file");
        write_counts(stderr, "qemu-insn: ", n, last);
        return;
    }
    write_counts(f, "", n, last);
    fclose(f);
}

EXPORT int qemu_plugin_install(plugin_id id, const struct plugin_info *info,
                               int argc, char **argv)
{
    int i;

    for (i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0 && argv[i][4] != '\0') {
            out_path = argv[i] + 4;
        } else if (strncmp(argv[i], "vcpus=", 6) == 0 && argv[i][6] != '\0') {
            vcpus_path = argv[i] + 6;
        } else if (strncmp(argv[i], "blocks=", 7) == 0 && argv[i][7] != '\0') {
            blocks_path = argv[i] + 7;
        } else {
            fprintf(stderr, "qemu-insn: unknown argument '%s' "
                            "(they are out=PATH, vcpus=PATH and blocks=PATH)\n", argv[i]);
            return -1;
        }
    }

    if (qemu_plugin_version >= 2) {
        if (qemu_plugin_scoreboard_new == NULL || qemu_plugin_u64_sum == NULL) {
            fprintf(stderr, "qemu-insn: this QEMU has the per-vCPU inline API "
                            "but no scoreboards\n");
            return -1;
        }
        if (qemu_plugin_u64_get == NULL || qemu_plugin_num_vcpus == NULL) {
            fprintf(stderr, "qemu-insn: this QEMU's scoreboards cannot be "
                            "read per vCPU\n");
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
    qemu_plugin_register_vcpu_exit_cb(id, on_vcpu_exit);
    if (per_vcpu.score == NULL) {
        qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
        qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
    }
    qemu_plugin_register_atexit_cb(id, report_total, NULL);
    return 0;
}

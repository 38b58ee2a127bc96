/*
 * insncount.c - a QEMU TCG plugin that counts guest instructions, and estimates cycles,
 * between markers.
 *
 * Built by onnx2mcu with the host C compiler; the plugin API declarations it needs are in
 * qemu_plugin_api.h.
 *
 * Arguments:
 *   marks=ADDR[:ADDR...]  the entry addresses of marker functions (q8_bench_start,
 *                         q8_bench_stop, q8_layer_mark). Every execution of a marker's
 *                         first instruction appends "EVENT <marker index> <instructions so
 *                         far> <cycles so far>" to the plugin log.
 *   costs=PATH            the cycle model's cost of every instruction of the image (lines
 *                         "address alone after_previous taken_penalty unaligned_target",
 *                         hex address, written by codegen/cycles.py). Without it only
 *                         instructions are counted, inline, and cycles stay 0.
 *   unaligned=1           with costs: charge each unaligned data access its extra bus
 *                         cycles (Cortex-M4 TRM 3.3.2: a halfword split in two bytes +1,
 *                         a word at a halfword address +1, at an odd address +2).
 *   flash=LO:HI,wait=W,line=L,icache=I,dcache=D
 *                         with costs: the board's flash at [LO, HI) has W wait states
 *                         behind caches of I instruction and D data lines of L bytes
 *                         (least recently used out); every miss stalls W cycles. Counted
 *                         apart (the fourth number of EVENT), so the zero-wait estimate
 *                         stays what it was.
 *
 * With costs, a callback at each translation block's execution adds the block's cost
 * (its first instruction alone, the others after their predecessor) and, when the block
 * does not start where the previous one falls through, the previous block's taken-branch
 * penalty (plus the extra cycle of a 32-bit target at a halfword address).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MAX_MARKS 8

static uint64_t executed;
static uint64_t cycles;
static uint64_t wait; /* flash wait-state stalls, beside the zero-wait cycles */
static uint64_t unknown; /* executed instructions the cost file does not list */
static uint64_t marks[MAX_MARKS];
static uintptr_t mark_ids[MAX_MARKS];
static int mark_count;

/* ------------------------------------------------------------------ the cost file */

typedef struct {
    uint64_t address; /* 0: empty slot */
    uint8_t alone, after_previous, taken_penalty, unaligned_target;
} insn_cost;

static insn_cost *costs;
static size_t cost_slots; /* a power of two, at least twice the entries */

static size_t slot_of(uint64_t address)
{
    return (size_t)((address >> 1) * 0x9E3779B97F4A7C15ull) & (cost_slots - 1);
}

static const insn_cost *find_cost(uint64_t address)
{
    size_t i;
    if (costs == NULL) {
        return NULL;
    }
    for (i = slot_of(address); costs[i].address != 0; i = (i + 1) & (cost_slots - 1)) {
        if (costs[i].address == address) {
            return &costs[i];
        }
    }
    return NULL;
}

static int load_costs(const char *path)
{
    FILE *f = fopen(path, "r");
    size_t lines = 0;
    char line[128];
    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        lines++;
    }
    for (cost_slots = 16; cost_slots < 2 * lines + 2; cost_slots *= 2) {
    }
    costs = calloc(cost_slots, sizeof *costs);
    if (costs == NULL) {
        fclose(f);
        return -1;
    }
    rewind(f);
    while (fgets(line, sizeof line, f) != NULL) {
        uint64_t address;
        unsigned alone, after, penalty, unaligned;
        size_t i;
        if (sscanf(line, "%" SCNx64 " %u %u %u %u", &address, &alone, &after, &penalty,
                   &unaligned) != 5 || address == 0) {
            continue; /* address 0 is the vector table, never executed */
        }
        for (i = slot_of(address); costs[i].address != 0 && costs[i].address != address;
             i = (i + 1) & (cost_slots - 1)) {
        }
        costs[i].address = address;
        costs[i].alone = (uint8_t)alone;
        costs[i].after_previous = (uint8_t)after;
        costs[i].taken_penalty = (uint8_t)penalty;
        costs[i].unaligned_target = (uint8_t)unaligned;
    }
    fclose(f);
    return 0;
}

/* ------------------------------------------------------------------ memory */

#define MAX_LINES 256

static int charge_unaligned;
static uint64_t flash_lo, flash_hi;
static unsigned wait_states, line_shift;

typedef struct {
    uint64_t tags[MAX_LINES]; /* line numbers, most recently used first */
    unsigned used, size;
} line_cache;

static line_cache icache, dcache;

/* Is `line` in the cache? Either way it is the most recently used line after. */
static int cache_hit(line_cache *cache, uint64_t line)
{
    unsigned i, last;
    for (i = 0; i < cache->used; i++) {
        if (cache->tags[i] == line) {
            break;
        }
    }
    int hit = i < cache->used;
    if (!hit) {
        if (cache->used < cache->size) {
            cache->used++;
        }
        i = cache->used - 1; /* the least recently used falls out */
    }
    for (last = i; last > 0; last--) {
        cache->tags[last] = cache->tags[last - 1];
    }
    cache->tags[0] = line;
    return hit;
}

static void fetch_lines(uint64_t start, uint64_t end)
{
    uint64_t line;
    if (end <= start || start < flash_lo || start >= flash_hi) {
        return;
    }
    for (line = start >> line_shift; line <= (end - 1) >> line_shift; line++) {
        if (icache.size == 0 || !cache_hit(&icache, line)) {
            wait += wait_states;
        }
    }
}

static void on_memory(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr,
                      void *userdata)
{
    unsigned size = 1u << qemu_plugin_mem_size_shift(info);
    (void)vcpu_index;
    (void)userdata;
    if (charge_unaligned && size > 1 && (vaddr & (size - 1)) != 0) {
        cycles += size == 4 && (vaddr & 1) != 0 ? 2 : 1;
    }
    if (wait_states != 0 && vaddr >= flash_lo && vaddr < flash_hi
            && !qemu_plugin_mem_is_store(info)) {
        if (dcache.size == 0 || !cache_hit(&dcache, vaddr >> line_shift)) {
            wait += wait_states;
        }
    }
}

/* ------------------------------------------------------------------ blocks */

typedef struct block_cost {
    uint64_t start, fall_through;
    uint64_t n, cycles, unknown;
    uint32_t taken_penalty, unaligned_target;
} block_cost;

static const block_cost *previous_block;

static void on_block(unsigned int vcpu_index, void *userdata)
{
    const block_cost *block = userdata;
    (void)vcpu_index;
    if (previous_block != NULL && block->start != previous_block->fall_through) {
        cycles += previous_block->taken_penalty + block->unaligned_target;
    }
    cycles += block->cycles;
    if (wait_states != 0) {
        fetch_lines(block->start, block->fall_through);
    }
    executed += block->n;
    unknown += block->unknown;
    previous_block = block;
}

/* Blocks retranslated at the same address get new records, kept until exit. */
static block_cost *cost_block(struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb), i;
    block_cost *block = calloc(1, sizeof *block);
    if (block == NULL) {
        return NULL;
    }
    block->n = n;
    for (i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t address = qemu_plugin_insn_vaddr(insn);
        const insn_cost *cost = find_cost(address);
        if (i == 0) {
            block->start = address;
            block->unaligned_target = cost ? cost->unaligned_target : 0;
        }
        if (cost == NULL) {
            block->cycles += 1;
            block->unknown += 1;
        } else {
            block->cycles += i == 0 ? cost->alone : cost->after_previous;
        }
        if (i == n - 1) {
            block->fall_through = address + qemu_plugin_insn_size(insn);
            block->taken_penalty = cost ? cost->taken_penalty : 0;
        }
    }
    return block;
}

static void on_mark(unsigned int vcpu_index, void *userdata)
{
    char line[128];
    (void)vcpu_index;
    snprintf(line, sizeof line, "EVENT %u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
             (unsigned)(uintptr_t)userdata, executed, cycles, wait);
    qemu_plugin_outs(line);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb), i;
    int m;
    block_cost *block = costs != NULL ? cost_block(tb) : NULL;
    (void)id;
    if (block != NULL) {
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, block);
    } else {
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed, n);
    }
    for (i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t address = qemu_plugin_insn_vaddr(insn);
        if (block != NULL && (charge_unaligned || wait_states != 0)) {
            qemu_plugin_register_vcpu_mem_cb(insn, on_memory, QEMU_PLUGIN_CB_NO_REGS,
                                             QEMU_PLUGIN_MEM_RW, NULL);
        }
        for (m = 0; m < mark_count; m++) {
            if (address == marks[m]) {
                qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS,
                                                       (void *)mark_ids[m]);
            }
        }
    }
}

static void on_guest_exit(qemu_plugin_id_t id, void *userdata)
{
    char line[128];
    (void)id;
    (void)userdata;
    snprintf(line, sizeof line, "TOTAL %" PRIu64 " %" PRIu64 " UNKNOWN %" PRIu64
             " WAIT %" PRIu64 "\n", executed, cycles, unknown, wait);
    qemu_plugin_outs(line);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    int i;
    (void)info;
    for (i = 0; i < argc; i++) {
        if (strncmp(argv[i], "marks=", 6) == 0) {
            char *rest = argv[i] + 6;
            while (*rest && mark_count < MAX_MARKS) {
                char *end;
                uint64_t address = strtoull(rest, &end, 0);
                if (end == rest) {
                    break;
                }
                /* Thumb function addresses have bit 0 set; instructions do not. */
                marks[mark_count] = address & ~(uint64_t)1;
                mark_ids[mark_count] = (uintptr_t)mark_count;
                mark_count++;
                rest = *end == ':' ? end + 1 : end;
            }
        } else if (strncmp(argv[i], "costs=", 6) == 0 && load_costs(argv[i] + 6) != 0) {
            fprintf(stderr, "insncount: cannot read the cost file %s\n", argv[i] + 6);
            return -1;
        } else if (strncmp(argv[i], "unaligned=", 10) == 0) {
            charge_unaligned = atoi(argv[i] + 10) != 0;
        } else if (strncmp(argv[i], "flash=", 6) == 0) {
            char *end;
            flash_lo = strtoull(argv[i] + 6, &end, 0);
            flash_hi = *end == ':' ? strtoull(end + 1, NULL, 0) : 0;
        } else if (strncmp(argv[i], "wait=", 5) == 0) {
            wait_states = (unsigned)atoi(argv[i] + 5);
        } else if (strncmp(argv[i], "line=", 5) == 0) {
            unsigned bytes = (unsigned)atoi(argv[i] + 5);
            for (line_shift = 0; (1u << line_shift) < bytes && line_shift < 16; line_shift++) {
            }
        } else if (strncmp(argv[i], "icache=", 7) == 0) {
            icache.size = (unsigned)atoi(argv[i] + 7);
        } else if (strncmp(argv[i], "dcache=", 7) == 0) {
            dcache.size = (unsigned)atoi(argv[i] + 7);
        }
    }
    if (icache.size > MAX_LINES || dcache.size > MAX_LINES || flash_hi < flash_lo) {
        fprintf(stderr, "insncount: bad flash model (at most %d cache lines)\n", MAX_LINES);
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_guest_exit, NULL);
    return 0;
}

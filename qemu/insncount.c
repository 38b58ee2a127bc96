/*
 * insncount.c - a QEMU TCG plugin that counts guest instructions between markers.
 *
 * Built by onnx2mcu with the host C compiler; the plugin API declarations it needs are in
 * qemu_plugin_api.h.
 *
 * Arguments: marks=ADDR[:ADDR...] - the entry addresses of marker functions
 * (q8_bench_start, q8_bench_stop, q8_layer_mark). Every execution of a marker's first
 * instruction appends "EVENT <marker index> <instructions so far>" to the plugin log.
 * Instructions are counted per translation block, inline, so counting is exact and cheap;
 * differences between events are what the caller reads.
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
static uint64_t marks[MAX_MARKS];
static uintptr_t mark_ids[MAX_MARKS];
static int mark_count;

static void on_mark(unsigned int vcpu_index, void *userdata)
{
    char line[64];
    (void)vcpu_index;
    snprintf(line, sizeof line, "EVENT %u %" PRIu64 "\n", (unsigned)(uintptr_t)userdata, executed);
    qemu_plugin_outs(line);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb), i;
    int m;
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed, n);
    for (i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t address = qemu_plugin_insn_vaddr(insn);
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
    char line[64];
    (void)id;
    (void)userdata;
    snprintf(line, sizeof line, "TOTAL %" PRIu64 "\n", executed);
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
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_guest_exit, NULL);
    return 0;
}

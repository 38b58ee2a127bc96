/*
 * pcprofile.c - a QEMU TCG plugin for bench/profile.py: how many times each guest
 * instruction executed ("PC <address> <count>" lines at exit), to find where a kernel's
 * instructions go. The plugin API declarations are in qemu_plugin_api.h.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* One record per translated block: its instructions' addresses and an execution counter
 * bumped inline. Blocks retranslated at the same address get new records; the reader
 * sums them. */
typedef struct {
    uint64_t count;
    size_t n;
    uint64_t *addresses;
} block_record;

static block_record **blocks;
static size_t block_count, block_capacity;

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb), i;
    block_record *rec = calloc(1, sizeof *rec);
    (void)id;
    if (rec == NULL) {
        abort();
    }
    rec->n = n;
    rec->addresses = calloc(n ? n : 1, sizeof(uint64_t));
    if (rec->addresses == NULL) {
        abort();
    }
    for (i = 0; i < n; i++) {
        rec->addresses[i] = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
    }
    if (block_count == block_capacity) {
        block_capacity = block_capacity ? 2 * block_capacity : 1024;
        blocks = realloc(blocks, block_capacity * sizeof *blocks);
        if (blocks == NULL) {
            abort();
        }
    }
    blocks[block_count++] = rec;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &rec->count, 1);
}

static void on_guest_exit(qemu_plugin_id_t id, void *userdata)
{
    char line[64];
    size_t b, i;
    (void)id;
    (void)userdata;
    for (b = 0; b < block_count; b++) {
        if (blocks[b]->count == 0) {
            continue;
        }
        for (i = 0; i < blocks[b]->n; i++) {
            snprintf(line, sizeof line, "PC %" PRIx64 " %" PRIu64 "\n", blocks[b]->addresses[i],
                     blocks[b]->count);
            qemu_plugin_outs(line);
        }
    }
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    (void)argc;
    (void)argv;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_guest_exit, NULL);
    return 0;
}

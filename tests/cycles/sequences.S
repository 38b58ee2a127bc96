/*
 * Hand-written instruction sequences that validate the cycle model (codegen/cycles.py,
 * qemu/insncount.c), with the cycles each takes worked out from the Cortex-M4 and
 * Cortex-M0+ Technical Reference Manuals. tests/test_cycles.py holds the expected figures
 * beside the name of each sequence.
 *
 * measure(buffer, sequence) runs the markers as a model harness does: start, stop (the
 * empty region), then start, the sequence, stop. The region around a sequence costs a
 * fixed overhead beyond the sequence's own body (the call into it and the return from
 * it), which the empty sequence measures. r0 holds the buffer (64 aligned words, the
 * first holding its own address) when a sequence starts; sequences may use r1-r11 and
 * s0-s15.
 */
    .syntax unified
    .thumb
    .text

    .macro FUNCTION name
    .align 2
    .global \name
    .type \name, %function
\name:
    .endm

FUNCTION q8_bench_start
    bx lr
FUNCTION q8_bench_stop
    bx lr

#if __ARM_ARCH_ISA_THUMB >= 2
/* Every instruction 32-bit, from an aligned start: each return lands on an aligned
 * address. */
FUNCTION measure
    push.w {r4-r11, lr}
    mov.w r11, r1
    mov.w r10, r0
    bl q8_bench_start
    bl q8_bench_stop
    mov.w r0, r10
    bl q8_bench_start
    nop
    blx r11
    bl q8_bench_stop
    pop.w {r4-r11, pc}
#else
FUNCTION measure
    push {r4-r7, lr}
    mov r4, r1
    mov r5, r0
    bl q8_bench_start
    bl q8_bench_stop
    mov r0, r5
    bl q8_bench_start
    nop
    blx r4
    bl q8_bench_stop
    pop {r4-r7, pc}
#endif

FUNCTION seq_empty
    bx lr

FUNCTION seq_alu
    .rept 10
    adds r1, r1, #1
    .endr
    bx lr

FUNCTION seq_loop
    movs r1, #100
1:  subs r1, r1, #1
    bne 1b
    bx lr

FUNCTION seq_multiply
    movs r2, #3
    movs r3, #5
    .rept 3
    muls r2, r3, r2
    .endr
    bx lr

#if __ARM_ARCH_ISA_THUMB >= 2

FUNCTION seq_load_pipelined
    ldr r2, [r0]
    ldr r3, [r0, #4]
    ldr r1, [r0, #8]
    bx lr

FUNCTION seq_load_dependent
    ldr r2, [r0]
    ldr r3, [r2, #4]
    bx lr

FUNCTION seq_address_stall
    adds r1, r0, #4
    ldr r2, [r1]
    bx lr

FUNCTION seq_load_multiple
    ldrd r2, r3, [r0]
    ldm.w r0, {r1, r2, r3}
    bx lr

FUNCTION seq_stores
    movs r1, #0
    nop
    str r2, [r0, #4]
    str r2, [r0, r1]
    bx lr

FUNCTION seq_dsp
    smlad r2, r3, r1, r2
    mul r2, r3, r2
    smull r2, r3, r1, r2
    sdiv r2, r3, r1
    bx lr

FUNCTION seq_float
    vmov s0, r2
    vadd.f32 s1, s0, s0
    vmla.f32 s1, s0, s0
    vdiv.f32 s2, s1, s0
    vmov r3, s2
    vldr s3, [r0]
    vldr d2, [r0]
    vpush {s16-s17}
    vpop {s16-s17}
    bx lr

FUNCTION seq_branch_aligned
    b.n 1f
    nop
1:  add.w r1, r1, #1
    bx lr

FUNCTION seq_branch_unaligned
    b.n 1f
    nop
    nop
1:  add.w r1, r1, #1
    bx lr

FUNCTION seq_branch_register
    adr r1, 1f
    adds r1, r1, #1
    bx r1
    .align 2
1:  nop
    bx lr

FUNCTION seq_call_pop_pc
    push {r4, lr}
    bl 2f
    pop {r4, pc}
2:  bx lr

FUNCTION seq_dot_loop
    movs r1, #10
1:  ldr r2, [r0], #4
    ldr r3, [r0], #4
    smlad r4, r2, r3, r4
    subs r1, r1, #1
    bne 1b
    bx lr

FUNCTION seq_literal
    ldr r2, =0x12345678
    ldr r3, [r0]
    bx lr
    .ltorg

/* Unaligned loads (the buffer is word aligned): a word at an odd address is three bus
 * accesses, at a halfword address two, a halfword at an odd address two. */
FUNCTION seq_unaligned
    ldr r1, [r0, #1]
    ldr r2, [r0, #6]
    ldrh r3, [r0, #9]
    bx lr

/* Eight word loads, from a 32-byte table in flash (.rodata) or from the buffer in RAM,
 * by the same code (each function on a 32-byte boundary and as long as the other, so
 * that their instruction fetches miss the same cache lines): the flash model's data
 * misses are the difference between the two. */
    .balign 32
FUNCTION seq_flash_loads
    movw r1, #:lower16:flash_table
    movt r1, #:upper16:flash_table
    .irp offset, 0, 4, 8, 12, 16, 20, 24, 28
    ldr.w r2, [r1, #\offset]
    .endr
    bx lr

    .balign 32
FUNCTION seq_ram_loads
    mov.w r1, r0
    nop.w
    .irp offset, 0, 4, 8, 12, 16, 20, 24, 28
    ldr.w r2, [r1, #\offset]
    .endr
    bx lr

    .section .rodata
    .balign 32
flash_table:
    .word 1, 2, 3, 4, 5, 6, 7, 8
    .text

#else

FUNCTION seq_loads_stores
    ldr r2, [r0]
    ldr r3, [r0, #4]
    str r2, [r0, #8]
    bx lr

FUNCTION seq_push_pop_pc
    push {r4-r7, lr}
    pop {r4-r7, pc}

FUNCTION seq_call_pop_pc
    push {lr}
    bl 2f
    pop {pc}
2:  bx lr

FUNCTION seq_load_store_multiple
    ldm r0!, {r1-r3}
    stm r0!, {r1-r3}
    bx lr

FUNCTION seq_branch
    b 1f
    nop
1:  adds r1, r1, #1
    bx lr

#endif

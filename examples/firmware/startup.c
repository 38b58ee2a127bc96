/*
 * startup.c - what runs before main() on a Cortex-M4F: the vector table, the copy of
 * .data from flash to RAM, the zeroing of .bss and turning the FPU on. The symbols it
 * uses (_estack, _sidata, _sdata, _edata, _sbss, _ebss) come from firmware.ld.
 *
 * Linked with -nostartfiles: newlib's own start-up code (crt0) is left out, and this file
 * takes its place.
 */
#include <stdint.h>
#include <stdlib.h>

extern uint32_t _estack, _sidata, _sdata, _edata, _sbss, _ebss;
extern int main(void);
void Reset_Handler(void);
void Default_Handler(void);

/*
 * The vector table: the initial stack pointer, then the addresses of the handlers of the
 * 15 system exceptions (0: reserved). firmware.ld puts it first in flash, where the core
 * looks at reset (VTOR = 0). A real part's table goes on with its device interrupts
 * (IRQ0, IRQ1, ... from the part's reference manual): lengthen the array and put your
 * handlers there. Unused entries go to Default_Handler.
 */
__attribute__((section(".isr_vector"), used))
const uint32_t vector_table[16] = {
    (uint32_t)&_estack,         /* initial stack pointer: the top of RAM */
    (uint32_t)Reset_Handler,    /* reset */
    (uint32_t)Default_Handler,  /* NMI */
    (uint32_t)Default_Handler,  /* HardFault */
    (uint32_t)Default_Handler,  /* MemManage */
    (uint32_t)Default_Handler,  /* BusFault */
    (uint32_t)Default_Handler,  /* UsageFault */
    0, 0, 0, 0,                 /* reserved */
    (uint32_t)Default_Handler,  /* SVCall */
    (uint32_t)Default_Handler,  /* DebugMonitor */
    0,                          /* reserved */
    (uint32_t)Default_Handler,  /* PendSV */
    (uint32_t)Default_Handler,  /* SysTick */
};

void Reset_Handler(void)
{
    const uint32_t *src = &_sidata;
    uint32_t *dst;

    /* .data: the initial values of initialized variables, from flash to RAM. */
    for (dst = &_sdata; dst < &_edata;) {
        *dst++ = *src++;
    }
    /* .bss: zero. (The models' arena is in .arena, which needs no initialization.) */
    for (dst = &_sbss; dst < &_ebss;) {
        *dst++ = 0u;
    }
    /* The FPU: full access to coprocessors CP10 and CP11 in CPACR, before the first
       floating-point instruction (the models' requantization and the GRU compute in
       float). */
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");

    /* exit() is newlib's: it flushes stdio, then its _exit (librdimon's, linked by
       --specs=rdimon.specs) ends the program through semihosting, and QEMU exits with
       main's status. */
    exit(main());
}

/*
 * A fault or an unexpected interrupt. Under QEMU, abort() ends the run through
 * semihosting with a failure status instead of hanging. On a board, a semihosting call
 * with no debugger attached faults in turn: there, stop in a loop (for (;;) {}) where a
 * debugger will find it, or reset.
 */
void Default_Handler(void)
{
    abort();
}

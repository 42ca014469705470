// The fiber switch of cuda_emulator.hpp on x86-64, defined once for all the emulated sources.
#if defined(__x86_64__)
asm(R"(
  .text
  .globl zt_emu_switch
  .type zt_emu_switch, @function
zt_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size zt_emu_switch, .-zt_emu_switch
)");
#endif

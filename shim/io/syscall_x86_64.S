/* syscall(): only SYS_close, SYS_close_range and SYS_statx are looked at; every other number is a
 * tail jump to the real syscall with every register and the stack as the caller left
 * them, so a syscall(SYS_vfork) or syscall(SYS_clone, ...) child that returns through
 * here finds no frame of ours (a C wrapper's frame would be the parent's, overwritten).
 *
 * libuv (Node.js) closes descriptors with syscall(SYS_close): unseen, the shim kept the
 * file behind the number, and a pipe that got the number next had its reads counted as
 * that file's. It makes every fs.stat* with syscall(SYS_statx) too. The three go to C
 * (shim/io/io_hooks.cpp), which records them as close(), close_range() and statx() do.
 *
 * The real syscall is resolved by the constructor whether or not this process is traced;
 * a call before that resolves it in C first (colabtrace_resolve_syscall).
 */
    .text
    .globl syscall
    .type syscall, @function
syscall:
    .cfi_startproc
    cmpq $3, %rdi                   /* SYS_close */
    je 3f
    cmpq $436, %rdi                 /* SYS_close_range */
    je 4f
    cmpq $332, %rdi                 /* SYS_statx */
    je 5f
1:  movq colabtrace_real_syscall(%rip), %r11
    testq %r11, %r11
    jz 2f
    jmp *%r11
2:  pushq %rdi                      /* keep the arguments across the resolver's call */
    .cfi_adjust_cfa_offset 8
    pushq %rsi
    .cfi_adjust_cfa_offset 8
    pushq %rdx
    .cfi_adjust_cfa_offset 8
    pushq %rcx
    .cfi_adjust_cfa_offset 8
    pushq %r8
    .cfi_adjust_cfa_offset 8
    pushq %r9
    .cfi_adjust_cfa_offset 8
    pushq %rax                      /* %al: the variadic call's vector-register count */
    .cfi_adjust_cfa_offset 8
    call colabtrace_resolve_syscall /* 7 pushes + the return address: aligned */
    movq %rax, %r11
    popq %rax
    .cfi_adjust_cfa_offset -8
    popq %r9
    .cfi_adjust_cfa_offset -8
    popq %r8
    .cfi_adjust_cfa_offset -8
    popq %rcx
    .cfi_adjust_cfa_offset -8
    popq %rdx
    .cfi_adjust_cfa_offset -8
    popq %rsi
    .cfi_adjust_cfa_offset -8
    popq %rdi
    .cfi_adjust_cfa_offset -8
    jmp *%r11
3:  jmp colabtrace_syscall_close        /* (number, fd) */
4:  jmp colabtrace_syscall_close_range  /* (number, first, last, flags) */
5:  jmp colabtrace_syscall_statx        /* (number, dirfd, path, flags, mask, buf) */
    .cfi_endproc
    .size syscall, .-syscall
    .section .note.GNU-stack,"",@progbits

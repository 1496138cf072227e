/* vfork(): mark the calling thread, then tail-call the real vfork.
 *
 * A vfork child runs on its parent's memory, TLS included, until it execs or exits.
 * The mark (ThreadState::vfork_pending, offset 48 in colabtrace::shim::t_thread) makes
 * every hook in the child pass straight through (see RecordingSlow in writer.cpp), so
 * the child never writes into the parent's trace. The parent clears the mark at its
 * next hook. The tail call keeps the caller's return address, as vfork requires.
 *
 * The real vfork is resolved by the constructor whether or not this process is traced
 * (COLABTRACE_DISABLE=1, an unwritable output directory); a call before the constructor
 * resolves it here. Only if that fails does fork stand in.
 */
    .text
    .globl vfork
    .type vfork, @function
vfork:
    .cfi_startproc
    movq _ZN10colabtrace4shim8t_threadE@gottpoff(%rip), %rax
    movl $1, %fs:48(%rax)
    movq colabtrace_real_vfork(%rip), %rax
    testq %rax, %rax
    jz 1f
    jmp *%rax
1:  subq $8, %rsp               /* realign the stack for a call */
    .cfi_adjust_cfa_offset 8
    call colabtrace_resolve_vfork
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    testq %rax, %rax
    jz 2f
    jmp *%rax
2:  jmp fork@PLT
    .cfi_endproc
    .size vfork, .-vfork
    .section .note.GNU-stack,"",@progbits

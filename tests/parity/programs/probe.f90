! gfortran parity probe (tests/parity/runtimes.py): stream I/O, execute_command_line,
! STOP and ERROR STOP codes, a bounds-check failure, and crashes that libgfortran's own
! handler reports with a backtrace and then raises again (SIGSEGV, SIGFPE).
program probe
  implicit none
  integer :: i, u, n
  integer, pointer :: p => null()
  real(8) :: a(100000), zero
  character(len=16) :: mode
  call get_command_argument(1, mode)
  do i = 1, size(a)
    a(i) = dble(i)
  end do
  open(newunit=u, file='data.bin', form='unformatted', access='stream', status='replace')
  write(u) a
  close(u)
  a = 0
  open(newunit=u, file='data.bin', form='unformatted', access='stream', status='old')
  read(u) a
  close(u)
  print '(a,f20.1)', 'sum ', sum(a)
  call execute_command_line('echo from the shell; exit 2', exitstat=n)
  print '(a,i0)', 'exitstat ', n
  select case (trim(mode))
  case ('stop')
    stop 3
  case ('error')
    error stop 'error stop on purpose'
  case ('bounds')
    n = size(a) * 2
    print *, a(n)
  case ('segv')
    p = 5
    print *, p
  case ('fpe')
    zero = 0
    print *, 1.0d0 / zero
  end select
end program

! Reductions on Fortran's datatypes through MPICH's Fortran library: the
! pair types MPI_2INTEGER, MPI_2REAL and MPI_2DOUBLE_PRECISION under
! MPI_MAXLOC and MPI_MINLOC (a tie goes to the smaller index), the logical
! operations on LOGICAL, products of COMPLEX and DOUBLE COMPLEX, and the
! sized types (INTEGER1, INTEGER2, INTEGER8, REAL4, REAL8, COMPLEX16);
! and MPI_Get_elements counting a pair type's two values, the value of a
! pair whose index did not come counting alone.
! Each failed check prints a FAIL line; rank 0 prints the verdict.
module reduction_checks
  implicit none
  integer :: failures = 0
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      print '(a,a)', 'FAIL reductions.f90: ', what
    end if
  end subroutine
end module

program reductions
  use mpi
  use reduction_checks
  implicit none
  integer :: ierr, rank, size, r, best
  integer :: ipair(2, 2), iout(2, 2)
  real :: rpair(2), rout(2)
  double precision :: dpair(2), dout(2)
  logical :: mine, all_of, any_of, odd
  complex :: c, cprod, cexpect
  double complex :: z, zprod, zexpect
  integer(kind=1) :: i1, i1max
  integer(kind=2) :: i2, i2sum
  integer(kind=8) :: i8, i8xor, i8expect
  real(kind=4) :: r4, r4sum
  real(kind=8) :: r8, r8max
  complex(kind=8) :: c16, c16sum
  integer :: status(MPI_STATUS_SIZE), elements, ints(4)
  double precision :: doubles(4)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)

  ! Two pairs each: the value rank mod 2 (ties between ranks), and rank.
  ipair(:, 1) = (/ mod(rank, 2), rank /)
  ipair(:, 2) = (/ rank, rank /)
  call MPI_Allreduce(ipair, iout, 2, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  best = min(1, size - 1)
  call check(ierr == MPI_SUCCESS .and. iout(1, 1) == mod(best, 2) .and. iout(2, 1) == best, &
       'MPI_MAXLOC on MPI_2INTEGER: a tie goes to the smaller index')
  call check(iout(1, 2) == size - 1 .and. iout(2, 2) == size - 1, 'MPI_MAXLOC on MPI_2INTEGER: the largest')
  call MPI_Allreduce(ipair, iout, 2, MPI_2INTEGER, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  call check(iout(1, 1) == 0 .and. iout(2, 1) == 0 .and. iout(1, 2) == 0 .and. iout(2, 2) == 0, &
       'MPI_MINLOC on MPI_2INTEGER')

  rpair = (/ real(size - rank) * 0.5, real(rank) /)
  call MPI_Allreduce(rpair, rout, 1, MPI_2REAL, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS .and. rout(1) == real(size) * 0.5 .and. rout(2) == 0.0, 'MPI_MAXLOC on MPI_2REAL')
  dpair = (/ dble(size - rank) * 0.25d0, dble(rank) /)
  call MPI_Allreduce(dpair, dout, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS .and. dout(1) == 0.25d0 .and. dout(2) == dble(size - 1), &
       'MPI_MINLOC on MPI_2DOUBLE_PRECISION')

  mine = rank == 0
  call MPI_Allreduce(mine, any_of, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(mine, all_of, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(mine, odd, 1, MPI_LOGICAL, MPI_LXOR, MPI_COMM_WORLD, ierr)
  call check(any_of .and. (all_of .eqv. (size == 1)) .and. odd, 'MPI_LOR, MPI_LAND, MPI_LXOR on MPI_LOGICAL')

  c = cmplx(0.0, 1.0)
  call MPI_Allreduce(c, cprod, 1, MPI_COMPLEX, MPI_PROD, MPI_COMM_WORLD, ierr)
  cexpect = (0.0, 1.0)**size
  call check(abs(cprod - cexpect) < 1.0e-5, 'MPI_PROD on MPI_COMPLEX (i to the size)')
  z = dcmplx(1.0d0, 1.0d0)
  call MPI_Allreduce(z, zprod, 1, MPI_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD, ierr)
  zexpect = dcmplx(1.0d0, 1.0d0)**size
  call check(abs(zprod - zexpect) < 1.0d-12, 'MPI_PROD on MPI_DOUBLE_COMPLEX')

  i1 = int(rank + 1, 1)
  call MPI_Allreduce(i1, i1max, 1, MPI_INTEGER1, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(i1max == size, 'MPI_MAX on MPI_INTEGER1')
  i2 = int(rank + 1000, 2)
  call MPI_Allreduce(i2, i2sum, 1, MPI_INTEGER2, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(i2sum == 1000 * size + size * (size - 1) / 2, 'MPI_SUM on MPI_INTEGER2')
  i8 = 2_8**40 + rank
  call MPI_Allreduce(i8, i8xor, 1, MPI_INTEGER8, MPI_BXOR, MPI_COMM_WORLD, ierr)
  i8expect = 0
  do r = 0, size - 1
    i8expect = ieor(i8expect, 2_8**40 + r)
  end do
  call check(i8xor == i8expect, 'MPI_BXOR on MPI_INTEGER8')
  r4 = 0.25 * rank
  call MPI_Allreduce(r4, r4sum, 1, MPI_REAL4, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(r4sum == 0.25 * (size * (size - 1) / 2), 'MPI_SUM on MPI_REAL4')
  r8 = 0.5d0 * rank
  call MPI_Allreduce(r8, r8max, 1, MPI_REAL8, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(r8max == 0.5d0 * (size - 1), 'MPI_MAX on MPI_REAL8')
  c16 = dcmplx(dble(rank), 2.0d0)
  call MPI_Allreduce(c16, c16sum, 1, MPI_COMPLEX16, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(c16sum == dcmplx(dble(size * (size - 1) / 2), 2.0d0 * size), 'MPI_SUM on MPI_COMPLEX16')

  ints = rank
  call MPI_Sendrecv(ints, 4, MPI_INTEGER, rank, 7, iout, 2, MPI_2INTEGER, rank, 7, MPI_COMM_WORLD, status, ierr)
  call MPI_Get_elements(status, MPI_2INTEGER, elements, ierr)
  call check(elements == 4, 'MPI_Get_elements: two MPI_2INTEGER pairs hold four elements')
  ! Three values into pairs: one pair and the value of a second.
  call MPI_Sendrecv((/ 1.0d0, 2.0d0, 3.0d0 /), 3, MPI_DOUBLE_PRECISION, 0, 8, doubles, 2, MPI_2DOUBLE_PRECISION, &
       0, 8, MPI_COMM_SELF, status, ierr)
  call MPI_Get_elements(status, MPI_2DOUBLE_PRECISION, elements, ierr)
  call check(elements == 3, 'MPI_Get_elements: three values received as MPI_2DOUBLE_PRECISION pairs')
  call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. failures == 0) print '(a,i0,a)', 'fortran reductions: all checks passed on ', size, ' ranks'
  call MPI_Finalize(ierr)
  if (failures /= 0) call exit(1)
end program

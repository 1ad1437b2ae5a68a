! The Fortran 2008 bindings (use mpi_f08) of MPICH's Fortran library on
! grappe's: derived-type handles and statuses, optional ierror, choice
! buffers through assumed-type arguments.
program f08
  use mpi_f08
  implicit none
  integer :: rank, size, count, failures = 0, ierr
  type(MPI_Status) :: status
  type(MPI_Comm) :: half
  type(MPI_Request) :: request
  double precision :: x(3), y(3)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  x = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, x, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS .or. any(x /= size * (size + 1) / 2)) call fail('MPI_Allreduce MPI_IN_PLACE')
  call MPI_Irecv(y, 3, MPI_DOUBLE_PRECISION, mod(rank + size - 1, size), 8, MPI_COMM_WORLD, request)
  call MPI_Send(x, 3, MPI_DOUBLE_PRECISION, mod(rank + 1, size), 8, MPI_COMM_WORLD)
  call MPI_Wait(request, status)
  call MPI_Get_count(status, MPI_DOUBLE_PRECISION, count)
  if (status%MPI_SOURCE /= mod(rank + size - 1, size) .or. status%MPI_TAG /= 8 .or. count /= 3) &
    call fail('MPI_Wait status')
  if (request /= MPI_REQUEST_NULL) call fail('MPI_Wait frees the request')
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half)
  call MPI_Barrier(half)
  call MPI_Comm_free(half)
  if (half /= MPI_COMM_NULL) call fail('MPI_Comm_free gives MPI_COMM_NULL')
  call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0 .and. failures == 0) print '(a,i0,a)', 'fortran 2008: all checks passed on ', size, ' ranks'
  call MPI_Finalize()
  if (failures /= 0) call exit(1)
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    failures = failures + 1
    print '(a,a)', 'FAIL f08.f90: ', what
  end subroutine
end program

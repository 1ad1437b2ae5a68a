! Fortran through MPICH's own Fortran library (libmpichfort.so.12, built
! with mpif90.mpich) on the C library underneath: start-up, the predefined
! attributes as Fortran integers, keys with Fortran copy and delete
! callbacks (run by MPI_Comm_dup and MPI_Comm_free through the Fortran
! library's proxies), blocking and non-blocking point-to-point with
! statuses and MPI_STATUS(ES)_IGNORE, collectives with MPI_IN_PLACE, a
! derived datatype, a user operation written in Fortran, MPI_Comm_split,
! MPI-IO (a file's handle through the Fortran library's MPI_File_c2f/f2c),
! a window's predefined and program's attributes as Fortran integers and
! an MPI_Put between fences.
! Each failed check prints a FAIL line; rank 0 prints the verdict.
module checks
  implicit none
  integer :: failures = 0
  integer :: copies = 0, deletions = 0
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      print '(a,a)', 'FAIL conformance.f90: ', what
    end if
  end subroutine

  subroutine copy_twice(comm, keyval, extra, value_in, value_out, flag, ierr)
    use mpi
    integer :: comm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, value_in, value_out
    logical :: flag
    value_out = value_in * 2 + extra
    flag = .true.
    copies = copies + 1
    ierr = MPI_SUCCESS
  end subroutine

  subroutine count_deletion(comm, keyval, value, extra, ierr)
    use mpi
    integer :: comm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: value, extra
    deletions = deletions + 1
    ierr = MPI_SUCCESS
  end subroutine

  ! inout(i) = max(in(i), inout(i)) on pairs (value, count): counts add up.
  subroutine max_and_count(invec, inoutvec, len, datatype)
    integer :: len, datatype, i
    integer :: invec(2, len), inoutvec(2, len)
    do i = 1, len
      inoutvec(1, i) = max(invec(1, i), inoutvec(1, i))
      inoutvec(2, i) = invec(2, i) + inoutvec(2, i)
    end do
  end subroutine
end module

program conformance
  use mpi
  use checks
  implicit none
  integer :: ierr, rank, size, status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 2)
  integer :: count, i, keyval, dup, half, half_rank, half_size, vector, op, total
  integer :: requests(2), pairs(2, 3), column(4, 3), row(3)
  integer(kind=MPI_ADDRESS_KIND) :: tag_ub, value
  integer :: tag_ub_int
  logical :: flag
  double precision :: x(4), y(4), t0
  integer :: fh, block(4), next_block(4)
  integer(kind=MPI_OFFSET_KIND) :: file_size
  integer :: win, window(4)
  integer(kind=MPI_ADDRESS_KIND) :: win_bytes

  call MPI_Init(ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Init returns MPI_SUCCESS')
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  t0 = MPI_Wtime()

  ! Predefined attributes, as integers.
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, tag_ub, flag, ierr)
  call check(flag .and. tag_ub >= 32767, 'MPI_Comm_get_attr(MPI_TAG_UB) gives the bound')
  call MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, tag_ub_int, flag, ierr)
  call check(flag .and. tag_ub_int == tag_ub, 'MPI_Attr_get(MPI_TAG_UB) gives the same bound')

  ! A key with Fortran callbacks: copied by dup, deleted by free.
  call MPI_Comm_create_keyval(copy_twice, count_deletion, keyval, 5_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, 100_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, keyval, value, flag, ierr)
  call check(flag .and. value == 100, 'a Fortran attribute reads back as set')
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call check(copies == 1, 'MPI_Comm_dup runs the Fortran copy callback once')
  call MPI_Comm_get_attr(dup, keyval, value, flag, ierr)
  call check(flag .and. value == 205, 'the copy holds what the callback made')
  call MPI_Comm_free(dup, ierr)
  call check(deletions == 1 .and. dup == MPI_COMM_NULL, 'MPI_Comm_free runs the Fortran delete callback')
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, keyval, ierr)
  call check(deletions == 2, 'MPI_Comm_delete_attr runs it too')
  call MPI_Comm_free_keyval(keyval, ierr)

  ! Point-to-point in a ring, blocking then non-blocking.
  x = rank + 0.5d0
  call MPI_Sendrecv(x, 4, MPI_DOUBLE_PRECISION, mod(rank + 1, size), 3, y, 4, MPI_DOUBLE_PRECISION, &
                    MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, status, ierr)
  call MPI_Get_count(status, MPI_DOUBLE_PRECISION, count, ierr)
  call check(status(MPI_SOURCE) == mod(rank + size - 1, size) .and. status(MPI_TAG) == 3 .and. count == 4, &
             'MPI_Sendrecv status: source, tag and count')
  call check(all(y == mod(rank + size - 1, size) + 0.5d0), 'MPI_Sendrecv data')
  call MPI_Irecv(y, 4, MPI_DOUBLE_PRECISION, mod(rank + size - 1, size), 4, MPI_COMM_WORLD, requests(1), ierr)
  call MPI_Isend(x, 4, MPI_DOUBLE_PRECISION, mod(rank + 1, size), 4, MPI_COMM_WORLD, requests(2), ierr)
  call MPI_Waitall(2, requests, statuses, ierr)
  call check(statuses(MPI_SOURCE, 1) == mod(rank + size - 1, size), 'MPI_Waitall statuses')
  call check(requests(1) == MPI_REQUEST_NULL .and. requests(2) == MPI_REQUEST_NULL, 'MPI_Waitall frees the requests')
  call MPI_Irecv(y, 4, MPI_DOUBLE_PRECISION, mod(rank + size - 1, size), 5, MPI_COMM_WORLD, requests(1), ierr)
  call MPI_Isend(x, 4, MPI_DOUBLE_PRECISION, mod(rank + 1, size), 5, MPI_COMM_WORLD, requests(2), ierr)
  call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Waitall with MPI_STATUSES_IGNORE')
  call MPI_Recv(y, 4, MPI_DOUBLE_PRECISION, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Recv from MPI_PROC_NULL with MPI_STATUS_IGNORE')

  ! Collectives, MPI_IN_PLACE from Fortran.
  x = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, x, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(x == size * (size + 1) / 2), 'MPI_Allreduce MPI_IN_PLACE')
  total = -1
  call MPI_Reduce(rank, total, 1, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call check(total == size - 1, 'MPI_Reduce MPI_MAX to rank 0')
  i = merge(42, 0, rank == size - 1)
  call MPI_Bcast(i, 1, MPI_INTEGER, size - 1, MPI_COMM_WORLD, ierr)
  call check(i == 42, 'MPI_Bcast from the last rank')

  ! A derived datatype: row 2 of a 4x3 column-major array.
  column = -1
  if (rank == 0) then
    do i = 1, 3
      column(2, i) = 10 * i
    end do
  end if
  call MPI_Type_vector(3, 1, 4, MPI_INTEGER, vector, ierr)
  call MPI_Type_commit(vector, ierr)
  call MPI_Bcast(column(2, 1), 1, vector, 0, MPI_COMM_WORLD, ierr)
  call check(all(column(2, :) == (/ 10, 20, 30 /)), 'MPI_Bcast of a strided row')
  if (rank /= 0) call check(all(column(1, :) == -1), 'the rows around it are left as they were')
  call MPI_Type_free(vector, ierr)

  ! A user operation written in Fortran.
  do i = 1, 3
    pairs(1, i) = rank * i
    pairs(2, i) = 1
  end do
  call MPI_Op_create(max_and_count, .true., op, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, pairs, 3, MPI_2INTEGER, op, MPI_COMM_WORLD, ierr)
  call check(all(pairs(1, :) == (/ (size - 1) * 1, (size - 1) * 2, (size - 1) * 3 /)), 'a Fortran operation: maxima')
  call check(all(pairs(2, :) == size), 'a Fortran operation: counts')
  call MPI_Op_free(op, ierr)

  ! Splitting.
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, half, ierr)
  call MPI_Comm_rank(half, half_rank, ierr)
  call MPI_Comm_size(half, half_size, ierr)
  call check(half_size == (size + 1 - mod(rank, 2)) / 2, 'MPI_Comm_split sizes')
  call MPI_Allgather(rank, 1, MPI_INTEGER, row, 1, MPI_INTEGER, half, ierr)
  call check(row(half_rank + 1) == rank, 'MPI_Allgather on the half, reversed')
  call MPI_Comm_free(half, ierr)

  ! A file: each rank writes its block, then reads the next rank's.
  call MPI_File_open(MPI_COMM_WORLD, 'conformance.dat', MPI_MODE_CREATE + MPI_MODE_RDWR + MPI_MODE_DELETE_ON_CLOSE, &
                     MPI_INFO_NULL, fh, ierr)
  call check(ierr == MPI_SUCCESS .and. fh /= MPI_FILE_NULL, 'MPI_File_open')
  block = (/ (rank * 10 + i, i = 1, 4) /)
  call MPI_File_write_at_all(fh, int(rank * 16, MPI_OFFSET_KIND), block, 4, MPI_INTEGER, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, count, ierr)
  call check(ierr == MPI_SUCCESS .and. count == 4, 'MPI_File_write_at_all counts 4 integers')
  call MPI_File_sync(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_sync(fh, ierr)
  call MPI_File_get_size(fh, file_size, ierr)
  call check(file_size == 16 * size, 'MPI_File_get_size')
  call MPI_File_read_at(fh, int(mod(rank + 1, size) * 16, MPI_OFFSET_KIND), next_block, 4, MPI_INTEGER, status, ierr)
  call check(all(next_block == (/ (mod(rank + 1, size) * 10 + i, i = 1, 4) /)), 'MPI_File_read_at of the next block')
  call MPI_File_close(fh, ierr)
  call check(ierr == MPI_SUCCESS .and. fh == MPI_FILE_NULL, 'MPI_File_close sets MPI_FILE_NULL')

  ! A window: its attributes as integers, an MPI_Put between fences.
  window = -1
  win_bytes = 16
  call MPI_Win_create(window, win_bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Win_create')
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, value, flag, ierr)
  call check(flag .and. value == 16, 'MPI_Win_get_attr(MPI_WIN_SIZE) gives the size')
  call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, value, flag, ierr)
  call check(flag .and. value == 4, 'MPI_Win_get_attr(MPI_WIN_DISP_UNIT) gives the unit')
  call MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, value, flag, ierr)
  call check(flag .and. value == MPI_WIN_FLAVOR_CREATE, 'MPI_Win_get_attr(MPI_WIN_CREATE_FLAVOR)')
  call MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, keyval, 0_MPI_ADDRESS_KIND, ierr)
  call MPI_Win_set_attr(win, keyval, 77_MPI_ADDRESS_KIND, ierr)
  call MPI_Win_get_attr(win, keyval, value, flag, ierr)
  call check(flag .and. value == 77, 'a window attribute reads back as set')
  call MPI_Win_fence(0, win, ierr)
  call MPI_Put(rank, 1, MPI_INTEGER, mod(rank + 1, size), 2_MPI_ADDRESS_KIND, 1, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call check(window(3) == mod(rank + size - 1, size) .and. window(1) == -1, 'MPI_Put from the left neighbour')
  call MPI_Win_free(win, ierr)
  call check(ierr == MPI_SUCCESS .and. win == MPI_WIN_NULL, 'MPI_Win_free sets MPI_WIN_NULL')
  call MPI_Win_free_keyval(keyval, ierr)

  call check(MPI_Wtime() >= t0, 'MPI_Wtime goes forward')
  call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. failures == 0) print '(a,i0,a)', 'fortran: all checks passed on ', size, ' ranks'
  call MPI_Finalize(ierr)
  if (failures /= 0) call exit(1)
end program

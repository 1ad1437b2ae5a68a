! Generalized requests started from Fortran (through MPICH's Fortran
! library, which marks them with MPII_Grequest_set_lang_f77): the query,
! free and cancel subroutines take every argument by reference and give
! their error code in their last one. Checks that each is called with its
! extra state, that the query's status and the free's error code come
! back through MPI_Wait, and that the cancel subroutine learns whether the
! request was complete. Each failed check prints a FAIL line; rank 0 prints
! the verdict.
module grequest_callbacks
  use mpi
  implicit none
  integer :: failures = 0
  integer :: queries = 0, frees = 0, cancels = 0
  logical :: cancelled_complete = .true.
  ! The error code the free subroutine gives (MPI_SUCCESS but in one check).
  integer :: free_code = MPI_SUCCESS
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      print '(a,a)', 'FAIL grequest.f90: ', what
    end if
  end subroutine

  ! Says the operation received 12 bytes from rank 7 with tag 3.
  subroutine query_fn(extra, status, ierr)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: status(MPI_STATUS_SIZE), ierr
    status(MPI_SOURCE) = 7
    status(MPI_TAG) = 3
    call MPI_Status_set_cancelled(status, .false., ierr)
    call MPI_Status_set_elements(status, MPI_BYTE, 12, ierr)
    extra = extra + 1
    queries = queries + 1
    ierr = MPI_SUCCESS
  end subroutine

  subroutine free_fn(extra, ierr)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: ierr
    extra = extra - 100
    frees = frees + 1
    ierr = free_code
  end subroutine

  subroutine cancel_fn(extra, complete, ierr)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    logical :: complete
    integer :: ierr
    cancelled_complete = complete
    cancels = cancels + 1
    ierr = MPI_SUCCESS
  end subroutine
end module

program grequest
  use mpi
  use grequest_callbacks
  implicit none
  integer :: ierr, rank, size, request, count, class
  integer :: status(MPI_STATUS_SIZE)
  integer(kind=MPI_ADDRESS_KIND) :: extra
  logical :: flag

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)

  extra = 1000
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra, request, ierr)
  call check(ierr == MPI_SUCCESS .and. request /= MPI_REQUEST_NULL, 'MPI_Grequest_start')
  call MPI_Test(request, flag, status, ierr)
  call check(ierr == MPI_SUCCESS .and. .not. flag, 'MPI_Test of a request not complete yet')
  call MPI_Grequest_complete(request, ierr)
  call MPI_Wait(request, status, ierr)
  call check(ierr == MPI_SUCCESS .and. request == MPI_REQUEST_NULL, 'MPI_Wait frees the request')
  call check(queries == 1 .and. frees == 1, 'MPI_Wait calls the query and free subroutines once each')
  call check(extra == 1000 + 1 - 100, 'the subroutines get the extra state by reference')
  call check(status(MPI_SOURCE) == 7 .and. status(MPI_TAG) == 3, 'the status comes from the query subroutine')
  call MPI_Get_count(status, MPI_BYTE, count, ierr)
  call check(count == 12, 'MPI_Get_count of the query''s status')

  ! MPI_Cancel before completion: the cancel subroutine hears .false.
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra, request, ierr)
  call MPI_Cancel(request, ierr)
  call check(ierr == MPI_SUCCESS .and. cancels == 1 .and. .not. cancelled_complete, &
       'MPI_Cancel calls the cancel subroutine with complete = .false.')
  call MPI_Grequest_complete(request, ierr)
  call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. frees == 2, 'MPI_Wait with MPI_STATUS_IGNORE calls the free subroutine')

  ! The free subroutine's error code is the wait's.
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  free_code = MPI_ERR_OTHER
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra, request, ierr)
  call MPI_Grequest_complete(request, ierr)
  call MPI_Wait(request, status, ierr)
  call MPI_Error_class(ierr, class, count)
  call check(class == MPI_ERR_OTHER, 'the free subroutine''s error code comes back from MPI_Wait')
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)

  call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. failures == 0) print '(a,i0,a)', 'fortran generalized requests: all checks passed on ', &
       size, ' ranks'
  call MPI_Finalize(ierr)
  if (failures /= 0) call exit(1)
end program
